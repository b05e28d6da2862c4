# A batch job: runs once to completion.
#
#   drover job run examples/batch.nomad.hcl
job "hello" {
  type        = "batch"
  datacenters = ["*"]

  group "hello" {
    count = 1

    # Batch work is retried in place a few times, then rescheduled once.
    restart {
      attempts = 1
      delay    = "5s"
      mode     = "fail"
    }

    task "hello" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello from drover; sleep 1"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
