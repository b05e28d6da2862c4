# A service in a docker container: busybox's web server on a dynamic port.
#
#   ./scripts/busybox-image.sh           # builds drover/busybox:local, no registry needed
#   drover job run examples/docker.nomad.hcl
#   curl http://127.0.0.1:<port>/        # the port: drover alloc status <alloc>
#
# Any image the docker daemon has or can pull works the same way; images
# are pulled once per node and removed 3 minutes after their last task.
job "web" {
  type        = "service"
  datacenters = ["*"]

  group "web" {
    count = 1

    network {
      # A dynamic host port, forwarded to port 8080 inside the container.
      port "http" {
        to = 8080
      }
    }

    task "httpd" {
      driver = "docker"

      config {
        image   = "drover/busybox:local"
        command = "httpd"
        args    = ["-f", "-v", "-p", "8080", "-h", "/var/www"]
        ports   = ["http"]
      }

      resources {
        cpu    = 100
        memory = 32
      }
    }
  }
}
