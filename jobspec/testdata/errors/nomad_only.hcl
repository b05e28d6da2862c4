job "web" {
  type = "sysbatch"

  constraint {
    is_set = "${meta.rack}"
  }

  group_selection "runtime" {
    count = 1
  }

  group "g" {
    dynamic "task" {
      for_each = ["a", "b"]
      labels   = [task.value]
      content {
        driver = "raw_exec"
      }
    }

    task "t" {
      driver = "docker"
      config {
        image = "redis:7"
        logging "syslog" {
          tag = "web"
        }
        dynamic "mount" {
          for_each = ["/a"]
          content {
            target = mount.value
          }
        }
      }
    }
  }
}
