// The body metamodel of the gesture recognition case study (000 §7 Fig. 15, 002 Fig. 1),
// after Jnect's bodymodel: a Body contains its 20 skeleton joints (those a Kinect v1 tracks),
// each a PositionedElement with a position in metres (x: to the subject's right, y: height
// above the floor, z: distance from the sensor) and a display colour — 6 attributes, as in
// 000 §7.4. `slide` is what the gesture rule acts on: the presentation slide this body is at.
metamodel body

class Body {
  attr slide: int
  ref head: Head [1] contains
  ref centerShoulder: CenterShoulder [1] contains
  ref spine: Spine [1] contains
  ref centerHip: CenterHip [1] contains
  ref leftShoulder: LeftShoulder [1] contains
  ref leftElbow: LeftElbow [1] contains
  ref leftWrist: LeftWrist [1] contains
  ref leftHand: LeftHand [1] contains
  ref rightShoulder: RightShoulder [1] contains
  ref rightElbow: RightElbow [1] contains
  ref rightWrist: RightWrist [1] contains
  ref rightHand: RightHand [1] contains
  ref leftHip: LeftHip [1] contains
  ref leftKnee: LeftKnee [1] contains
  ref leftAnkle: LeftAnkle [1] contains
  ref leftFoot: LeftFoot [1] contains
  ref rightHip: RightHip [1] contains
  ref rightKnee: RightKnee [1] contains
  ref rightAnkle: RightAnkle [1] contains
  ref rightFoot: RightFoot [1] contains
}

abstract class PositionedElement {
  attr x: float
  attr y: float
  attr z: float
  attr color_r: int
  attr color_g: int
  attr color_b: int
}

class Head extends PositionedElement {}
class CenterShoulder extends PositionedElement {}
class Spine extends PositionedElement {}
class CenterHip extends PositionedElement {}
class LeftShoulder extends PositionedElement {}
class LeftElbow extends PositionedElement {}
class LeftWrist extends PositionedElement {}
class LeftHand extends PositionedElement {}
class RightShoulder extends PositionedElement {}
class RightElbow extends PositionedElement {}
class RightWrist extends PositionedElement {}
class RightHand extends PositionedElement {}
class LeftHip extends PositionedElement {}
class LeftKnee extends PositionedElement {}
class LeftAnkle extends PositionedElement {}
class LeftFoot extends PositionedElement {}
class RightHip extends PositionedElement {}
class RightKnee extends PositionedElement {}
class RightAnkle extends PositionedElement {}
class RightFoot extends PositionedElement {}
