# An example Drover job. Run it with:
#
#   drover job run example.nomad.hcl
#
# Drover reads Nomad's job specification language; see docs/jobspec.md for
# what it supports. As written it places on a single node (the dev agent of
# `make run` or `drover agent -dev`); on a cluster, run more copies with
# -var, e.g. -var count=3 (one per node: see distinct_hosts below).

variable "count" {
  type        = number
  default     = 1
  description = "How many copies of the group to run (at most one per node)."
}

# A job is the unit you submit: one or more groups of tasks.
job "example" {
  # service: runs until stopped; batch: runs to completion; system: one
  # copy on every eligible node.
  type = "service"

  # Where the job may run. "*" matches every datacenter.
  datacenters = ["*"]

  # 1 (lowest) to 100 (highest); higher-priority work is scheduled first.
  priority = 50

  # Placement rules for every group. ${attr.*} values are node facts,
  # resolved by the scheduler.
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  # A group is placed as a unit on one node, count times.
  group "web" {
    count = var.count

    # Never put two copies of this group on the same node.
    constraint {
      distinct_hosts = true
    }

    # How the client restarts a failed task in place.
    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }

    # How the servers replace a failed allocation on another node.
    reschedule {
      delay          = "30s"
      delay_function = "exponential"
      max_delay      = "1h"
      unlimited      = true
    }

    # How many allocations move at once when a node drains.
    migrate {
      max_parallel = 1
    }

    task "server" {
      # raw_exec runs a command directly on the node, without isolation.
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do echo \"hello from $NOMAD_ALLOC_ID\"; sleep 10; done"]
      }

      env {
        GREETING = "hello"
      }

      # CPU in MHz, memory in MB.
      resources {
        cpu    = 100
        memory = 64
      }

      # How long the client waits after kill_signal before it kills.
      kill_timeout = "5s"
      kill_signal  = "SIGTERM"
    }
  }
}
