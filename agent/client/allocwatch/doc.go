// Package allocwatch holds the index bookkeeping of a client node's
// blocking allocation watch (Node.GetClientAllocs), shared by the client
// agent and the node simulator so that both follow one rule for which
// answers may be acted on.
//
// It must stay free of I/O: it only decides query options and whether an
// answer is trusted.
package allocwatch
