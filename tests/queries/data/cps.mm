// The CPS source model (000 §3 Fig. 4a), simplified.
metamodel cps

abstract class Identifiable { attr identifier: str }
class HostType extends Identifiable { ref instances: HostInstance[0..*] contains }
class HostInstance extends Identifiable {
  attr totalCpu: int
  attr availableCpu: int
  attr totalRam: int
  attr availableRam: int
  ref applications: ApplicationInstance[0..*]
}
class ApplicationType extends Identifiable { ref instances: ApplicationInstance[0..*] contains }
class ApplicationInstance extends Identifiable { ref allocatedTo: HostInstance[0..1] }
