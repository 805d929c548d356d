package analyze

import "regexp"

// possibleCauses matches a message that lists several causes it might have, numbered, and
// names none of them: Ray's "Worker unexpectedly exits with a connection error code 2. End of
// file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM
// killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed
// unexpectedly due to SIGSEGV or other unexpected errors." Ray prints it for every worker that
// dies without telling why (ray-project/ray#24495, Unakar/Logic-RL#18): an OOM kill, a stop, a
// segfault, or a worker Ray retried while the job went on.
//
// The message's opening says as little: "A worker died or was killed while executing a task by
// an unexpected system error" is a death that does not know whether it was a kill.
var possibleCauses = regexp.MustCompile(`(?i)\b(?:potential|possible|probable)\s+(?:root\s+)?(?:causes|reasons)\b[^\n]*?\(1\)[^\n]*?\(2\)[^\n]*|\bdied or was killed\b`)

// namedByPossibleCauses says whether c, the second tier's cause of tf, was named only by the
// words of a numbered list of possible causes: with the lists taken out, the failure's words
// name another category or none. Such a list names what might have happened, not what did.
func (a *analyzer) namedByPossibleCauses(tf *terminalFailure, c Classification) bool {
	failure, context := tf.failureText()
	if !possibleCauses.MatchString(failure) {
		return false
	}
	failure = possibleCauses.ReplaceAllString(failure, "")
	context = possibleCauses.ReplaceAllString(context, "")
	return a.vocab.classify(failure, context, tf.raised()).Category != c.Category
}
