package server

import "github.com/drover-project/drover/structs"

// System is the system endpoint.
type System struct {
	srv *Server
}

// GarbageCollect collects, on the leader, everything terminal whatever its
// age: dead jobs, terminal evaluations with their allocations, and down
// nodes without allocations (the periodic collection waits for the
// configured thresholds).
func (sys *System) GarbageCollect(args *structs.GenericRequest, reply *structs.GenericResponse) error {
	args.AllowStale = false // it writes: only the leader may serve it
	if done, err := sys.srv.forward("System.GarbageCollect", args, args, reply); done {
		return err
	}
	index, err := sys.srv.garbageCollectNow()
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}
