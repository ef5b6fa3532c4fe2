package validator

import "errors"

// CheckFileName reports whether name is a file name a command may write: a bare name in the
// work directory by layer 6's rule (letters, digits, '.', '_', '-' and '+', never leading '-'
// or '.', never ".."), with no pattern left in it. The control plane holds a worker's reported
// output names to it.
func CheckFileName(name string) error {
	if why := checkName(name, namePlain); why != "" {
		return errors.New("the name " + why)
	}
	return nil
}
