job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
    
  }
}
