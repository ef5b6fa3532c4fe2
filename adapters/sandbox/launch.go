package sandbox

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// launchMagic opens every command a launcher reads: the format's name and version.
const launchMagic = "mediajobs-launch-1"

// Encode writes l in the launchers' wire format, fields each ended by a NUL byte: the magic,
// the program, the end mark in hexadecimal (it holds NULs; empty for none), the count of
// rlimits and each one's resource and value, the count of arguments and each argument; numbers
// in decimal. It is as easy to read in C (the native launcher) as in Go, and no field can hold
// a NUL (no argument of exec can). A command longer than MaxLaunchBytes is an error: no
// launcher would read it whole.
func (l Launch) Encode() ([]byte, error) {
	for _, r := range l.Rlimits {
		if r.Resource < 0 || r.Resource > maxResource {
			return nil, fmt.Errorf("sandbox: launch: rlimit resource %d is not between 0 and %d", r.Resource, maxResource)
		}
	}
	for _, s := range append([]string{l.Program}, l.Args...) {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, fmt.Errorf("sandbox: launch: %q holds a NUL byte", s)
		}
	}
	var b bytes.Buffer
	field := func(s string) {
		b.WriteString(s)
		b.WriteByte(0)
	}
	field(launchMagic)
	field(l.Program)
	field(hex.EncodeToString([]byte(l.End)))
	field(strconv.Itoa(len(l.Rlimits)))
	for _, r := range l.Rlimits {
		field(strconv.Itoa(r.Resource))
		field(strconv.FormatUint(r.Value, 10))
	}
	field(strconv.Itoa(len(l.Args)))
	for _, a := range l.Args {
		field(a)
	}
	if b.Len() > MaxLaunchBytes {
		return nil, fmt.Errorf("sandbox: launch: the command is %d bytes, more than %d", b.Len(), MaxLaunchBytes)
	}
	return b.Bytes(), nil
}

// maxResource is the highest rlimit resource number a command may name (the launchers' bound).
const maxResource = 1 << 16

// decimal reads s as Encode writes numbers: decimal, with no sign and no leading zero, and at
// most max. The launchers read their descriptor arguments the same way.
func decimal(s string, max uint64) (uint64, bool) {
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil && v <= max && s == strconv.FormatUint(v, 10)
}

// errLaunchFormat is a command that is not Encode's.
var errLaunchFormat = errors.New("not a launch command")

// DecodeLaunch reads a command Encode wrote; anything else, a byte more or less, a sign or a
// leading zero included, is an error.
func DecodeLaunch(data []byte) (Launch, error) {
	fields := strings.Split(string(data), "\x00")
	if len(fields) < 6 || fields[len(fields)-1] != "" || fields[0] != launchMagic {
		return Launch{}, errLaunchFormat
	}
	end, err := hex.DecodeString(fields[2])
	if err != nil || fields[2] != hex.EncodeToString(end) {
		return Launch{}, fmt.Errorf("%w: end mark %q", errLaunchFormat, fields[2])
	}
	l := Launch{Program: fields[1], End: string(end)}
	rest := fields[3 : len(fields)-1] // the last NUL ends the last field
	next := func(max uint64) (uint64, error) {
		if len(rest) == 0 {
			return 0, fmt.Errorf("%w: it ends early", errLaunchFormat)
		}
		v, ok := decimal(rest[0], max)
		if !ok {
			return 0, fmt.Errorf("%w: number %q", errLaunchFormat, rest[0])
		}
		rest = rest[1:]
		return v, nil
	}
	n, err := next(uint64(len(rest)))
	if err != nil {
		return Launch{}, err
	}
	for range n {
		res, err := next(maxResource)
		if err != nil {
			return Launch{}, err
		}
		v, err := next(1<<64 - 1)
		if err != nil {
			return Launch{}, err
		}
		l.Rlimits = append(l.Rlimits, Rlimit{Resource: int(res), Value: v})
	}
	if n, err = next(uint64(len(rest))); err != nil {
		return Launch{}, err
	}
	if n != uint64(len(rest)) {
		return Launch{}, fmt.Errorf("%w: %d arguments announced, %d sent", errLaunchFormat, n, len(rest))
	}
	l.Args = rest
	return l, nil
}
