package check

import (
	"fmt"
	"slices"
)

// Level is the guarantee level an invariant carries in SEMANTICS.md.
type Level uint8

const (
	Hard       Level = iota // enforced by kubelet sequencing logic
	BestEffort              // documented best effort or bounded by a budget
	// User is a user-level guarantee (user.go): what the user of a sidecar
	// wanted, judged the same way whatever the policy, native or a
	// workaround. Kubernetes promises none of them, so their findings are
	// never violations: they are Unmet, and never change a verdict.
	User
)

func (l Level) String() string {
	switch l {
	case Hard:
		return "HARD"
	case User:
		return "USER"
	}
	return "BEST-EFFORT"
}

// Class is how a finding counts.
type Class uint8

const (
	Violation   Class = iota // guarantee broken, no excusing fault
	Degradation              // broken under a fault that voids it
	Bound                    // a timing bound was missed
	Unmet                    // a user-level guarantee was not met (Level User)
)

var classNames = [...]string{"violation", "degradation", "bound-exceeded", "unmet"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// Validity is a porcupine/Jepsen verdict.
type Validity uint8

const (
	Valid Validity = iota
	Unknown
	Invalid
)

var validityNames = [...]string{"valid", "unknown", "invalid"}

func (v Validity) String() string {
	if int(v) < len(validityNames) {
		return validityNames[v]
	}
	return fmt.Sprintf("Validity(%d)", uint8(v))
}

// Merge composes two verdicts with Jepsen's merge-valid priority:
// Invalid beats Unknown beats Valid. The constants are ordered so that this
// is max.
func Merge(a, b Validity) Validity { return max(a, b) }

// Text forms, so that reports marshal to readable JSON.

func (l Level) MarshalText() ([]byte, error)    { return []byte(l.String()), nil }
func (c Class) MarshalText() ([]byte, error)    { return []byte(c.String()), nil }
func (v Validity) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

func (l *Level) UnmarshalText(b []byte) error {
	switch string(b) {
	case "HARD":
		*l = Hard
	case "BEST-EFFORT":
		*l = BestEffort
	case "USER":
		*l = User
	default:
		return fmt.Errorf("check: unknown level %q", b)
	}
	return nil
}

func (c *Class) UnmarshalText(b []byte) error {
	i := slices.Index(classNames[:], string(b))
	if i < 0 {
		return fmt.Errorf("check: unknown class %q", b)
	}
	*c = Class(i)
	return nil
}

func (v *Validity) UnmarshalText(b []byte) error {
	i := slices.Index(validityNames[:], string(b))
	if i < 0 {
		return fmt.Errorf("check: unknown validity %q", b)
	}
	*v = Validity(i)
	return nil
}
