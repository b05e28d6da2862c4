job {
  group {
    task "t" {
      driver = "raw_exec"
    }
  }
  group "a" "b" {
    task "t" {
      driver = "raw_exec"
    }
  }
}
