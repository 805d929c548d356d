package analyze

// Role says how a rule's findings take part in choosing the root cause (docs/rules.md, "How a
// rule takes part in choosing the root cause"). Two things make it: what the finding says
// (why a process failed, that it failed, or a symptom of another failure) and whether the
// rule yields to every other rule matching the same message (a catch-all). A few rules are
// both generic or secondary and a catch-all: the two compound roles.
type Role string

// The roles.
const (
	// RolePrimary findings say why a process failed; the earliest is the root cause.
	RolePrimary Role = "primary"
	// RoleSecondary findings are usually symptoms of another rank's failure (an NCCL
	// watchdog timeout, a SIGTERM from the elastic agent).
	RoleSecondary Role = "secondary"
	// RoleGeneric findings say that a process failed, not why (an abort, a launcher's
	// summary, a non-zero exit); a specific finding of the same process explains them.
	RoleGeneric Role = "generic"
	// RoleFallback findings are catch-alls, reported only when no other rule matched the
	// line or message (any Python exception).
	RoleFallback Role = "fallback"
	// RoleSecondaryFallback and RoleGenericFallback are secondary and generic findings
	// that also yield to every other rule matching the same message.
	RoleSecondaryFallback Role = "secondary-fallback"
	RoleGenericFallback   Role = "generic-fallback"
)

// Roles are the words a rule's role may be.
var Roles = []Role{RolePrimary, RoleSecondary, RoleGeneric, RoleFallback, RoleSecondaryFallback, RoleGenericFallback}

// Secondary reports whether findings of the role are symptoms of another failure.
func (r Role) Secondary() bool { return r == RoleSecondary || r == RoleSecondaryFallback }

// Generic reports whether findings of the role say that a process failed, not why.
func (r Role) Generic() bool { return r == RoleGeneric || r == RoleGenericFallback }

// Fallback reports whether the rule yields to every other rule matching the same message.
func (r Role) Fallback() bool {
	return r == RoleFallback || r == RoleSecondaryFallback || r == RoleGenericFallback
}
