module github.com/drover-project/drover

go 1.26

require github.com/hashicorp/go-msgpack/v2 v2.1.2
