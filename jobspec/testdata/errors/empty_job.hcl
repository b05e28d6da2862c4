job "web" {
  type = "batch"
}
