package analyze

import (
	"fmt"
	"strings"
)

// Severity orders findings. The zero value is invalid so a rule without one is caught.
type Severity int

// Severities, lowest first.
const (
	SeverityInfo Severity = iota + 1
	SeverityWarning
	SeverityError
	SeverityCritical
)

var severityNames = []string{"", "info", "warning", "error", "critical"}

func (s Severity) String() string {
	if s < SeverityInfo || s > SeverityCritical {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

// ParseSeverity reads "info", "warning", "error" or "critical".
func ParseSeverity(s string) (Severity, error) {
	for i, n := range severityNames {
		if i > 0 && strings.EqualFold(s, n) {
			return Severity(i), nil
		}
	}
	return 0, fmt.Errorf("severity %q is not info, warning, error or critical", s)
}

// MarshalText writes the name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
