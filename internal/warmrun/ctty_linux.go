package warmrun

import (
	"bytes"
	"fmt"
	"strconv"
)

// cttyOf is the device of the controlling terminal of the process d is, 0
// for none: the seventh field of its stat, after the command name, which
// may hold spaces and parentheses. Read through d, as every other fact is,
// so a pid reused meanwhile is not read in the caller's place.
func cttyOf(d procDir) (uint64, error) {
	b, err := d.read("stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s/stat: no command name", d.name)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 5 {
		return 0, fmt.Errorf("%s/stat: too few fields", d.name)
	}
	n, err := strconv.ParseInt(string(f[4]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s/stat: tty_nr: %v", d.name, err)
	}
	return uint64(uint32(n)), nil
}
