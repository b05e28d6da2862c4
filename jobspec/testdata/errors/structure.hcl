job "a" {
  group "g" {
    restart {
      attempts = 1
    }
    restart {
      attempts = 2
    }
    task "t" {
      config {
        command = "/bin/true"
      }
      constraint {
        attribute = "${attr.kernel.name}"
        operator  = "="
        regexp    = "linux"
      }
      constraint {}
    }
  }
}

job "b" {
  group "g" {
    task "t" {
      driver = "raw_exec"
    }
  }
}
