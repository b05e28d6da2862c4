// Package allocdir lays out an allocation's directories on the client, as
// Nomad does:
//
//	<alloc root>/<alloc id>/
//	    alloc/            shared by the group's tasks (NOMAD_ALLOC_DIR)
//	        logs/         <task>.stdout.N, <task>.stderr.N and their FIFOs
//	        data/ tmp/
//	    <task>/           the task's working directory
//	        local/        NOMAD_TASK_DIR
//	        secrets/ tmp/
//
// It only creates and removes directories and computes paths; it must never
// start processes or know about drivers.
package allocdir
