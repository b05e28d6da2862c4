// Package boltcheck looks at a bbolt database file before bbolt opens it.
//
// bbolt maps the file into memory and trusts it: a file cut short (a full
// disk, a bad copy, a crash of the file system) makes it read pages past
// the end, and the process dies with SIGBUS or an assertion panic, with
// no word of which file is at fault. Check reads the two meta pages with
// ordinary reads, picks the newest valid one as bbolt would, and compares
// the file's size with the pages that meta says are in use: a damaged
// file becomes an error naming it.
//
// It checks the file's frame, not every page (that is bbolt's tx.Check,
// which reads the whole file and is itself exposed to the same faults).
// It must never write to the file or hold it open.
package boltcheck
