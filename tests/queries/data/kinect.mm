// The body metamodel of the gesture case study (000 §7 Fig. 15, 002 Fig. 1), right arm and head.
metamodel kinect

class Body {
  ref head: Head[0..1] contains
  ref rightHand: RightHand[0..1] contains
  ref rightElbow: RightElbow[0..1] contains
  ref rightShoulder: RightShoulder[0..1] contains
}
abstract class PositionedElement {
  attr x: float
  attr y: float
  attr z: float
}
class Head extends PositionedElement {}
class RightHand extends PositionedElement {}
class RightElbow extends PositionedElement {}
class RightShoulder extends PositionedElement {}
