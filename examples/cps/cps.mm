// The CPS source metamodel of 000 Fig. 4a (after the VIATRA CPS demonstrator): hosts and
// applications, typed by host and application types. A HostInstance has seven attributes
// (000 §6.5): its node IP and the available and total amounts of CPU, RAM and HDD.
metamodel cps

abstract class Identifiable { attr identifier: str }

class CyberPhysicalSystem extends Identifiable {
  ref hostTypes: HostType[*] contains
  ref appTypes: ApplicationType[*] contains
}

class HostType extends Identifiable {
  attr defaultCpu: int
  attr defaultRam: int
  attr defaultHdd: int
  ref instances: HostInstance[*] contains
}

class HostInstance extends Identifiable {
  attr nodeIp: str
  attr availableCpu: int
  attr availableRam: int
  attr availableHdd: int
  attr totalCpu: int
  attr totalRam: int
  attr totalHdd: int
  ref applications: ApplicationInstance[*]
  ref communicateWith: HostInstance[*]
}

class ApplicationType extends Identifiable {
  attr exeFileLocation: str
  attr cpuRequirement: int
  ref instances: ApplicationInstance[*] contains
}

class ApplicationInstance extends Identifiable {
  attr state: str = "Stopped"
  ref allocatedTo: HostInstance[0..1]
}
