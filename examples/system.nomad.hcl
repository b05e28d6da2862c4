# A system job: one copy on every eligible Linux node, including nodes
# that join later.
#
#   drover job run examples/system.nomad.hcl
job "node-heartbeat" {
  type        = "system"
  datacenters = ["*"]
  priority    = 70

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  group "heartbeat" {
    task "heartbeat" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do echo \"alive on $(hostname)\"; sleep 30; done"]
      }

      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
