package server

import "github.com/drover-project/drover/structs"

// System is the system endpoint.
type System struct {
	srv *Server
}

// GarbageCollect would remove terminal evaluations and allocations and
// dead jobs. Drover has no garbage collector yet: it fails with code
// unsupported (HTTP 501).
func (sys *System) GarbageCollect(args *structs.GenericRequest, reply *structs.GenericResponse) error {
	if done, err := sys.srv.forward("System.GarbageCollect", args, args, reply); done {
		return err
	}
	return structs.NewError(structs.ErrCodeUnsupported, "garbage collection is not implemented yet")
}
