package wire

// Names of the server's file store on the wire, shared by the API and the
// node. This file imports no go.temporal.io package.

// MaxFile is the most a file kept in the server's store may be: the most a
// call's result may come to (offload.MaxResult; internal/cli's test holds
// the two equal).
const MaxFile = 31 << 20

// TaintHeader carries, on a read of a file of the server's store, why the
// file is tainted: a tainted job kept it. The reading job is tainted from
// then on. A node joins every value it is given: one is enough to taint.
const TaintHeader = "Airlock-Taint"
