package analyze

import (
	"bytes"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/coroner-dev/coroner/logscan"
)

// Launchers and pastes put a prefix in front of every line of a training process: torchrun's
// "[rank3]:" and "[default0]:", Slurm's "srun -l" and torchrun --redirects "10: ", Open MPI's
// --tag-output "[1,0]<stderr>:", Intel MPI's -l "[1] " (read with a log viewer's line numbers,
// below), torch_xla's xla_dist "10.164.0.60 [2] ", Ray's "(RayTrainWorker pid=123,
// ip=10.0.0.1) ", docker compose's "trainer-1  | ", and the "> " of a quoted paste. Rules match the line without them
// (a pattern anchored at ^ sees the program's own text) and the finding keeps the whole line as
// evidence; the prefix says which process printed the line.

// linePrefix is what the prefixes in front of a line said.
type linePrefix struct {
	// rank is the global rank the prefix names, or -1.
	rank int
	// stream names the process the prefix names ("rank 3", "local rank 0", "pid 123",
	// "trainer-1"), or "" when there was none (a quote alone names no process).
	stream string
}

// maxPrefixes bounds how many prefixes are stripped from one line (a paste of a paste).
const maxPrefixes = 4

// splitPrefix returns the text after the launcher prefixes of a line and what they said. The
// innermost prefix that names a process wins: a quoted Open MPI line "> [1,3]<stdout>: ..." is
// rank 3's.
func splitPrefix(text []byte) ([]byte, linePrefix) {
	p := linePrefix{rank: -1}
	for range maxPrefixes {
		rest, rank, stream, ok := onePrefix(text)
		if !ok {
			break
		}
		text = rest
		if stream != "" {
			p.rank, p.stream = rank, stream
		}
	}
	return text, p
}

// onePrefix strips one prefix. Leading blanks before a prefix are part of it.
func onePrefix(b []byte) (rest []byte, rank int, stream string, ok bool) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	s := b[i:]
	if len(s) == 0 {
		return nil, 0, "", false
	}
	switch s[0] {
	case '[':
		if n, stream := kubectlPrefixAt(s); n > 0 {
			return s[n:], -1, stream, true
		}
		// [rank3]:  [default0]:  [1,3]<stderr>:
		end := bytes.IndexByte(s, ']')
		if end < 2 || end > 40 {
			return nil, 0, "", false
		}
		inner, after := s[1:end], s[end+1:]
		if n, ok := cutNumber(inner, "rank"); ok && hasColon(after) {
			return skipColon(after), n, rankStream(n), true
		}
		// "[1]<stdout>:" (horovodrun's rank tag: Open MPI's without the job, horovod/horovod#3827).
		if n, ok := atoi(inner); ok && stdStream(after) && hasColon(after[len("<stdout>"):]) {
			return skipColon(after[len("<stdout>"):]), n, rankStream(n), true
		}
		if j := bytes.IndexByte(inner, ','); j > 0 {
			if _, ok := atoi(inner[:j]); ok {
				if n, ok := atoi(inner[j+1:]); ok && stdStream(after) {
					after = after[len("<stdout>"):]
					if hasColon(after) {
						return skipColon(after), n, rankStream(n), true
					}
				}
			}
		}
		// "[worker-0] ": a host or pod name in brackets, as some log shippers put it.
		if n := hostAt(inner); n == len(inner) && len(after) > 1 && after[0] == ' ' {
			return after[1:], -1, string(inner), true
		}
		// torchrun's default "[{role}{local_rank}]:" (role "default" unless the script names one).
		if j := lastNonDigit(inner); j >= 0 && j < len(inner)-1 && isWord(inner[:j+1]) && hasColon(after) {
			n, _ := atoi(inner[j+1:])
			return skipColon(after), -1, localRankStream(n), true
		}
	case '(':
		// (pid=909597)  (RayTrainWorker pid=123, ip=10.0.0.1)
		end := bytes.IndexByte(s, ')')
		if end < 0 || end > 120 {
			return nil, 0, "", false
		}
		inner := s[1:end]
		k := bytes.Index(inner, []byte("pid="))
		if k < 0 || (k > 0 && inner[k-1] != ' ') || (k > 0 && !isWord(bytes.TrimSpace(inner[:k]))) {
			return nil, 0, "", false
		}
		digits := inner[k+4:]
		n := 0
		for n < len(digits) && digits[n] >= '0' && digits[n] <= '9' {
			n++
		}
		if n == 0 || (n < len(digits) && !bytes.HasPrefix(digits[n:], []byte(", ip="))) {
			return nil, 0, "", false
		}
		rest := s[end+1:]
		if len(rest) > 0 && rest[0] == ' ' {
			rest = rest[1:]
		}
		return rest, -1, "pid " + string(digits[:n]), true
	case '>':
		// An e-mail style quote: names no process.
		if len(s) == 1 || s[1] == ' ' {
			return bytes.TrimPrefix(s[1:], []byte(" ")), -1, "", true
		}
	}
	// "2021-03-10T13:22:37.443Z: " in front of a launcher's prefix or of the program's line: a
	// log collector's time, which names no process. A logger's own header keeps its time
	// (Python's "2024-05-01 10:00:00,123 - name - ERROR - ", TensorFlow's "...: E file.cc:12] "):
	// logMessage reads the level after it.
	if n, colon := timeAt(s); n > 0 {
		rest := s[n:]
		// A second time right behind is taken by the next call, not looked into here: a line
		// of times one after another costs one look each, never a recursion per time.
		next, _ := timeAt(rest)
		ok := next > 0
		if !ok {
			_, _, _, ok = onePrefix(rest)
		}
		if ok || !levelLetter(rest) && (colon || !loggerHeadAt(rest)) {
			return rest, -1, "", true
		}
	}
	// "Jan  2 03:04:05 node1 python[1234]: " (syslog, journalctl): the process and its pid. A
	// kernel line ("... node1 kernel: NVRM: Xid ...") names no process and stays whole.
	if n, pid := syslogAt(s); n > 0 {
		return s[n:], -1, "pid " + string(pid), true
	}
	k := 0 // the first blank, in a loop: it is a few bytes in, where IndexByte's setup costs more
	for k < len(s) && k < 64 && s[k] != ' ' {
		k++
	}
	// The next two end in a colon and the line's first blank (neither a number nor a host name
	// holds a blank or a colon): a first word that does not end in a colon is neither.
	if k > 0 && s[k-1] == ':' {
		// "stderr: " and "stdout: ": the stream a runner that captures a child's output
		// names in front of each of its lines (accelerate test prints the training script's
		// so: huggingface/accelerate#1573, #1606); it names no process.
		if k == len("stderr:") && k < len(s) && (bytes.HasPrefix(s, []byte("stderr:")) || bytes.HasPrefix(s, []byte("stdout:"))) {
			return s[k+1:], -1, "", true
		}
		// "10: " (srun -l, torchrun --redirects): a short number, a colon and a space.
		if n := digitsAt(s); n > 0 && n <= 5 && len(s) > n+1 && s[n] == ':' && s[n+1] == ' ' {
			r, _ := atoi(s[:n])
			return s[n+2:], r, rankStream(r), true
		}
		// "worker-1: " and "10.0.0.7: " (pdsh, the DeepSpeed launcher's multi-node runner): a
		// host name that ends in a number after a dash, or an IPv4 address, a colon and a space.
		if n := hostAt(s); n > 0 && len(s) > n+1 && s[n] == ':' && s[n+1] == ' ' {
			return s[n+2:], -1, string(s[:n]), true
		}
	}
	// "10.164.0.60 [2] " (torch_xla's xla_dist, after its time: pytorch/xla#2552,
	// huggingface/accelerate#501): the worker's address and its index among the hosts, which
	// is no rank of the job.
	// hostAt's name ends in a digit: a first word that does not (a program's "step 3 | ...",
	// most lines) is not read again.
	if k > 0 && k < len(s) && s[k-1] >= '0' && s[k-1] <= '9' && hostAt(s) == k {
		if _, width := numberAt(s[k+1:]); width > 0 && k+1+width < len(s) && s[k+width] == ' ' {
			return s[k+1+width:], -1, string(s[:k+width]), true
		}
	}
	// "trainer-1  | " (docker compose): a service name, blanks, a bar.
	// The name is the line's first word, then two blanks or more: a bar further on ("step 3 |
	// loss") is never looked for.
	if k > 0 && k < min(len(s), 64) && k+1 < len(s) && s[k+1] == ' ' {
		bar := k
		for bar < len(s) && s[bar] == ' ' {
			bar++
		}
		if bar+1 < len(s) && bar <= 64 && s[bar] == '|' && s[bar+1] == ' ' && isWord(s[:k]) {
			return s[bar+2:], -1, string(s[:k]), true
		}
	}
	return nil, 0, "", false
}

// A log viewer or a CI page copied with its gutter puts the line's number in brackets in front
// of every line ("[1757] {'loss': 0.0, ...}", "[80746] [rank0]:[E321 ...] Watchdog caught ...").
// Intel MPI's -l (-prepend-rank), MPICH's and torch_xla's multi-host launchers and a paste of
// NCCL's "[3] NCCL INFO" print the same form with the rank inside, and so do a shell's job
// number ("[1] 4242") and R's vectors ("[1] 0.5"), so one line never says which it is. Either
// way the bracket is no text of the program, and lineNumbers takes it off every line (a rule
// anchored at ^ and the second tier then see the program's own "Traceback" or
// "RuntimeError:"). It names a rank only once the log has shown that its brackets are ranks:
// the same numbers recur, interleaved, as ranks printing in turn do and line numbers never do.
// That is, at least two distinct numbers have each been read on minRankRecur lines or more,
// and the numbered lines read so far are not mostly counting up: no more of them are one more
// than the numbered line before than are not. A single numbered line, the first lines of a
// numbered paste, and pastes numbered from 1 one after another (each run counts up, and only
// their restarts do not) name no rank. The decision is read again at every numbered line, and
// the third line of a run counting up and the lines after it name none: line numbers pasted
// after a log of ranks name no rank past their second line.

// minNumberRun is how many numbered lines in a row, each numbered one more than the last, are
// read as line numbers whatever the lines before them said: two ranks printing in turn ("[0] ",
// "[1] ") make two.
const minNumberRun = 3

// minRankRecur is how many lines each of two distinct numbers is read on before the numbers
// can be ranks.
const minRankRecur = 2

// maxTrackedNumbers bounds how many distinct numbers lineNumbers counts: a log numbered by its
// viewer has one per line, and none of them recurs.
const maxTrackedNumbers = 4096

// lineNumbers follows the bracketed numbers at the start of a log's lines.
type lineNumbers struct {
	// last is the number of the last numbered line (seen: there was one).
	last int
	seen bool
	// number is the bracketed number stripped from the line strip read last, or -1: a
	// desync report's "[1] finished collective #3, ..." names the lagging rank so, whether
	// the log's brackets are ranks or not (sawState).
	number int
	// steps counts the numbered lines one more than the numbered line before, others the
	// numbered lines after the first that are not; run is how many numbered lines in a row
	// have counted up so (1: the last did not).
	steps, others, run int
	// counts holds how many lines each number was read on, until recurring numbers reach two
	// (then it is dropped).
	counts map[int]int
	// recurring counts the distinct numbers read on minRankRecur lines or more.
	recurring int
}

// strip returns line without the bracketed number in front of it, and the rank the number
// names, or -1 (no number, or numbers the log has not shown to be ranks).
func (r *lineNumbers) strip(line []byte) ([]byte, int) {
	n, width := numberAt(line)
	if width == 0 {
		r.number = -1
		return line, -1
	}
	r.number = n
	switch {
	case r.seen && n == r.last+1:
		r.steps++
		r.run++
	case r.seen:
		r.others++
		r.run = 1
	default:
		r.run = 1
	}
	r.last, r.seen = n, true
	if r.recurring < 2 {
		if r.counts == nil {
			r.counts = map[int]int{}
		}
		if c, ok := r.counts[n]; ok || len(r.counts) < maxTrackedNumbers {
			r.counts[n] = c + 1
			if c+1 == minRankRecur {
				r.recurring++
			}
		}
		if r.recurring >= 2 {
			r.counts = nil
		}
	}
	if r.recurring >= 2 && r.steps <= r.others && r.run < minNumberRun {
		return line[width:], n
	}
	return line[width:], -1
}

// numberAt reads "[N] " (or "[N]" alone: an empty line of the paste) at the start of b: the
// number and the width of the prefix with its blank, or 0.
func numberAt(b []byte) (n, width int) {
	if len(b) < 3 || b[0] != '[' {
		return 0, 0
	}
	d := digitsAt(b[1:])
	if d == 0 || d > 7 || 1+d >= len(b) || b[1+d] != ']' {
		return 0, 0
	}
	n, _ = atoi(b[1 : 1+d])
	width = 2 + d
	if width < len(b) {
		if b[width] != ' ' {
			return 0, 0
		}
		width++
	}
	return n, width
}

// kubectlPrefixAt reads the prefix of kubectl logs --prefix, "[pod/<pod>/<container>] "
// (geerlingguy/ansible-for-kubernetes#75, kubernetes/kubernetes#123874), at the start of b:
// its width with the blank and the process it names ("<pod>/<container>"), or 0.
func kubectlPrefixAt(b []byte) (int, string) {
	const head = "[pod/"
	if !bytes.HasPrefix(b, []byte(head)) {
		return 0, ""
	}
	end := bytes.IndexByte(b[:min(len(b), len(head)+256)], ']')
	if end < 0 || end+1 >= len(b) || b[end+1] != ' ' {
		return 0, ""
	}
	name := b[len(head):end]
	slash := bytes.IndexByte(name, '/')
	if slash <= 0 || slash == len(name)-1 || !isWord(name[:slash]) || !isWord(name[slash+1:]) {
		return 0, ""
	}
	return end + 2, string(name)
}

// hostAt returns the length of the host name pdsh puts in front of a line, or 0: letters,
// digits and dashes, starting with a letter, with a dash and ending in a digit ("worker-1",
// "gpu-node-07"); or an IPv4 address.
func hostAt(b []byte) int {
	n, dash, dots := 0, false, 0
	for n < len(b) && n < 64 {
		c := b[n]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' {
			dash = dash || c == '-'
			if c == '.' {
				dots++
			}
			n++
			continue
		}
		break
	}
	if n < 3 || n >= 64 || b[n-1] < '0' || b[n-1] > '9' {
		return 0
	}
	if b[0] >= '0' && b[0] <= '9' {
		// An IPv4 address: four numbers of at most three digits.
		parts := bytes.Split(b[:n], []byte("."))
		if len(parts) != 4 || dash {
			return 0
		}
		for _, p := range parts {
			if len(p) == 0 || len(p) > 3 || digitsAt(p) != len(p) {
				return 0
			}
		}
		return n
	}
	// A short host name: a version ("cuda-12.1") has dots.
	if !dash || dots > 0 || !(b[0] >= 'a' && b[0] <= 'z' || b[0] >= 'A' && b[0] <= 'Z') {
		return 0
	}
	return n
}

// timeAt returns the length of a date and time at the start of b (logscan.TimeLen), in
// brackets or not, with the colon and blanks after it, or 0, and whether a colon followed the
// time; more text must follow the blanks.
func timeAt(b []byte) (n int, colon bool) {
	i := 0
	if len(b) > 0 && b[0] == '[' {
		i = logscan.TimeLen(b[1:])
		if i == 0 || i+1 >= len(b) || b[i+1] != ']' {
			return 0, false
		}
		i += 2
	} else if i = logscan.TimeLen(b); i == 0 {
		return 0, false
	}
	if i < len(b) && b[i] == ':' && b[i-1] != ']' {
		colon = true
		i++
	}
	blanks := i
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i == blanks || i == len(b) {
		return 0, false
	}
	return i, colon
}

// levelLetter says whether b starts with glog's one-letter level and a blank ("E file.cc:12]
// ", as TensorFlow's C++ logging prints after its time).
func levelLetter(b []byte) bool {
	return len(b) > 1 && bytes.IndexByte([]byte("DIWEF"), b[0]) >= 0 && b[1] == ' '
}

// loggerHeadAt says whether b, what follows a time at the start of a line, is the rest of a
// logger's header: a separator ("- name - ERROR - ", "| ERROR | "), a bracketed field or a
// level word ("ERROR Traceback ..."), which logMessage reads with the time in front.
func loggerHeadAt(b []byte) bool {
	if len(b) > 0 && (b[0] == '|' || b[0] == '-' || b[0] == '[') {
		return true
	}
	n := leading(b, func(c byte) bool { return c >= 'A' && c <= 'Z' })
	if n == 0 || n < len(b) && (b[n] >= 'a' && b[n] <= 'z' || isDigit(b[n])) {
		return false
	}
	switch string(b[:n]) {
	case "TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING", "ERROR", "CRITICAL", "FATAL":
		return true
	}
	return false
}

// syslogAt returns the length of a syslog header at the start of b ("Jan  2 03:04:05 host
// name[1234]: ") and the pid it names, or 0.
func syslogAt(b []byte) (int, []byte) {
	const months = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec "
	if len(b) < 20 || b[3] != ' ' || !strings.Contains(months, string(b[:4])) {
		return 0, nil
	}
	i := 4
	if b[i] == ' ' {
		i++
	}
	d := digitsAt(b[i:])
	if d == 0 || d > 2 {
		return 0, nil
	}
	i += d
	if i+10 > len(b) || b[i] != ' ' || b[i+3] != ':' || b[i+6] != ':' || digitsAt(b[i+1:]) != 2 || digitsAt(b[i+4:]) != 2 || digitsAt(b[i+7:]) != 2 || b[i+9] != ' ' {
		return 0, nil
	}
	i += 10
	host := bytes.IndexByte(b[i:min(len(b), i+65)], ' ')
	if host <= 0 {
		return 0, nil
	}
	i += host + 1
	// name[pid]: the process.
	open := bytes.IndexByte(b[i:min(len(b), i+65)], '[')
	if open <= 0 || !isWord(b[i:i+open]) {
		return 0, nil
	}
	j := i + open + 1
	p := digitsAt(b[j:])
	if p == 0 || p > 10 || j+p+2 >= len(b) || b[j+p] != ']' || b[j+p+1] != ':' || b[j+p+2] != ' ' {
		return 0, nil
	}
	return j + p + 3, b[j : j+p]
}

// stdStream says whether b starts with Open MPI's "<stdout>" or "<stderr>" tag.
func stdStream(b []byte) bool {
	return bytes.HasPrefix(b, []byte("<stdout>")) || bytes.HasPrefix(b, []byte("<stderr>"))
}

func hasColon(b []byte) bool { return len(b) > 0 && b[0] == ':' }

func skipColon(b []byte) []byte {
	b = b[1:]
	if len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	return b
}

// cutNumber reads "<word><number>" such as "rank3".
func cutNumber(b []byte, word string) (int, bool) {
	if !bytes.HasPrefix(b, []byte(word)) {
		return 0, false
	}
	return atoi(b[len(word):])
}

func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 7 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func digitsAt(b []byte) int {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	return n
}

func lastNonDigit(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < '0' || b[i] > '9' {
			return i
		}
	}
	return -1
}

// isWord: letters, digits, '_', '-', '.'; starting with a letter.
func isWord(b []byte) bool {
	if len(b) == 0 || !(b[0] >= 'a' && b[0] <= 'z' || b[0] >= 'A' && b[0] <= 'Z') {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// contentRank finds the rank that PyTorch's process-group lines name in their own text:
// "[Rank 3] ..." and "[PG ID 0 PG GUID 0(default_pg) Rank 5] ...". It returns -1 when the line
// names none.
func contentRank(text []byte) int {
	for off := 0; ; {
		i := bytes.Index(text[off:], []byte("Rank "))
		if i < 0 {
			return -1
		}
		i += off
		n := digitsAt(text[i+5:])
		if n > 0 && n <= 7 && i+5+n < len(text) && text[i+5+n] == ']' && strings.LastIndexByte(string(text[max(0, i-64):i]), '[') >= 0 {
			r, _ := atoi(text[i+5 : i+5+n])
			return r
		}
		off = i + 5
	}
}

// The stream names of ranks, each made once per process: a prefix is read on every line of a
// log, and a name built per line was a tenth of the scan's time (and 2% of analyze's CPU at
// 16,384 ranks, for the ranks past the first 4,096 that were made at start). The names come
// in blocks of rankBlock, made at the first rank of a block met and shared by every scan
// worker; ranks past maxNamedRank get a name per call.
const (
	rankBlock    = 1024
	maxNamedRank = 1 << 20
)

var (
	rankNames      [maxNamedRank / rankBlock]atomic.Pointer[[rankBlock]string]
	localRankNames = func() []string {
		l := make([]string, 64)
		for i := range l {
			l[i] = "local rank " + strconv.Itoa(i)
		}
		return l
	}()
)

func rankStream(n int) string {
	if n < 0 || n >= maxNamedRank {
		return "rank " + strconv.Itoa(n)
	}
	at := &rankNames[n/rankBlock]
	names := at.Load()
	if names == nil {
		names = new([rankBlock]string)
		for i := range names {
			names[i] = "rank " + strconv.Itoa(n/rankBlock*rankBlock+i)
		}
		if !at.CompareAndSwap(nil, names) {
			names = at.Load() // another worker made the same names first
		}
	}
	return names[n%rankBlock]
}

func localRankStream(n int) string {
	if n >= 0 && n < len(localRankNames) {
		return localRankNames[n]
	}
	return "local rank " + strconv.Itoa(n)
}

// contentRanks is what a process's NCCL start-up lines said of its rank ("NCCL INFO comm
// 0x... rank 2 nranks 4 ... Init COMPLETE"): its rank in its largest communicator, the
// world's (a tensor- or pipeline-parallel group is smaller and numbers its ranks from 0),
// and that communicator's size. Two different ranks in communicators of that size mean the
// log holds several processes, and names none of them. Its numbers are of at most seven
// digits (atoi): 32 bits hold them, and every process of 200,000 logs has one.
type contentRanks struct {
	rank, nranks int32
	conflict     bool
}

// see reads a line of the process.
func (c *contentRanks) see(text []byte) {
	if bytes.IndexByte(text, 'k') < 0 {
		return // most lines: a search for " nranks " stops at every blank
	}
	i := bytes.Index(text, []byte(" nranks "))
	if i < 0 || !bytes.Contains(text[:i], []byte("NCCL")) {
		return
	}
	j := bytes.LastIndex(text[:i], []byte(" rank "))
	if j < 0 {
		return
	}
	r, ok := atoi(text[j+len(" rank ") : i])
	if !ok {
		return
	}
	n := digitsAt(text[i+len(" nranks "):])
	m, ok := atoi(text[i+len(" nranks ") : i+len(" nranks ")+n])
	if !ok || r >= m {
		return
	}
	c.merge(contentRanks{rank: int32(r), nranks: int32(m)})
}

// merge adds what another part of the same process said.
func (c *contentRanks) merge(o contentRanks) {
	switch {
	case o.nranks > c.nranks:
		*c = o
	case o.nranks == c.nranks && o.nranks > 0 && (o.rank != c.rank || o.conflict):
		c.conflict = true
	}
}

// get is the rank the lines said, or -1.
func (c contentRanks) get() int {
	if c.nranks == 0 || c.conflict {
		return -1
	}
	return int(c.rank)
}

// A log shipped as structured records arrives one JSON object a line, the program's line in
// one of its fields: Docker's json-file driver and fluent-bit keep it in "log"
// ({"log":"Traceback (most recent call last):\n","stream":"stderr","time":"..."}:
// docker-library/docker#224), a Cloud Logging export in "textPayload" or
// "jsonPayload":{"message": ...} (ai2cm/fv3net#1910), journald's JSON output in "MESSAGE".
// recordMessage reads that field, so that the rules (a pattern anchored at ^ among them) and
// both tiers see the program's line; the finding keeps the record as written.

// recordFields are the fields that hold a record's line, most specific first: a record with a
// "log" is a container runtime's, whose "message" (if any) is metadata.
// recordField tells them apart by the two bytes after the first quote: a field added here is
// added there too (TestRecordFieldOnePass compares it with a search for each field).
var recordFields = [...]string{`"log"`, `"textPayload"`, `"MESSAGE"`, `"message"`, `"msg"`}

// maxRecordBytes bounds the message read out of one record.
const maxRecordBytes = 16 << 10

// recordMessage appends to dst the line a JSON log record holds and says whether line is such
// a record: an object ("{" first) with one of recordFields as a string; a logger's record
// (a "message" or "msg") is followed by the record itself. The string is unescaped: "\n" and
// "\r" inside it (a traceback logged as one record) become blanks, so that the record stays one
// line; control characters other than tabs are dropped. escaped says that the message holds
// bytes the raw line does not (an escape other than the line end a runtime keeps at the end of
// every record: Docker's json-file "...\n"), so that the line's shape does not show them.
func recordMessage(dst, line []byte) (msg []byte, ok, escaped bool) {
	t := bytes.TrimLeft(line, " \t")
	if len(t) < 8 || t[0] != '{' {
		return dst, false, false
	}
	if i, v := recordField(t); v != nil {
		escaped = bytes.IndexByte(trimLineEndEscapes(v), '\\') >= 0
		dst = unescapeJSON(dst, v)
		if i >= firstLoggerField {
			// A logger's record: its other fields say more ("error":"Job.batch ... is
			// invalid" beside "msg":"failed to create k8s Job"), and stay after the message.
			dst = append(append(dst, ' ', ' '), t[:min(len(t), maxRecordBytes)]...)
		}
		return dst, true, escaped
	}
	return dst, false, false
}

// trimLineEndEscapes cuts the escaped line ends ("\n", "\r\n") and the blanks at the end of a
// record's raw string: unescapeJSON makes blanks of them and trims those, so they add no byte.
func trimLineEndEscapes(v []byte) []byte {
	for {
		v = bytes.TrimRight(v, " ")
		if len(v) < 2 || v[len(v)-2] != '\\' || (v[len(v)-1] != 'n' && v[len(v)-1] != 'r') || escapedAt(v, len(v)-2) {
			return v
		}
		v = v[:len(v)-2]
	}
}

// escapedAt says whether the backslash at v[i] is itself escaped (an odd run of backslashes
// before it): `\\n` is a backslash and an n, not a line end.
func escapedAt(v []byte, i int) bool {
	n := 0
	for i > 0 && v[i-1] == '\\' {
		n++
		i--
	}
	return n%2 == 1
}

// firstLoggerField is the index in recordFields of the first field a logger's own record
// (zap's, structlog's, python-json-logger's) holds its message in, beside fields of its own.
const firstLoggerField = 3

// recordField returns the first of recordFields that t has as a string (see fieldAt), its index
// and its raw (still escaped) value; len(recordFields) and nil when none. One pass over the
// quotes of t does what a search of t for each field in turn did: a field's occurrences are
// taken in order, each from the end of the one before it, and the first that is a key with a
// string value is the field's.
func recordField(t []byte) (int, []byte) {
	var next [len(recordFields)]int // where each field's next occurrence may begin
	best, val := len(recordFields), []byte(nil)
	for q := 0; best > 0; {
		i := bytes.IndexByte(t[q:], '"')
		if i < 0 {
			break
		}
		i += q
		q = i + 1
		// At most one field begins here: each ends with a quote and none is a prefix of
		// another. Its byte after the quote picks it (most quotes begin none).
		k := -1
		if i+1 < len(t) {
			switch t[i+1] {
			case 'l':
				k = 0
			case 't':
				k = 1
			case 'M':
				k = 2
			case 'm':
				k = 3
				if i+2 < len(t) && t[i+2] == 's' {
					k = 4
				}
			}
		}
		if k < 0 || k >= best || i < next[k] {
			continue
		}
		key := recordFields[k]
		if len(t)-i < len(key) || string(t[i:i+len(key)]) != key {
			continue
		}
		next[k] = i + len(key)
		if v := fieldAt(t, i, len(key)); v != nil {
			best, val = k, v
		}
	}
	return best, val
}

// fieldAt returns the raw (still escaped) string value of the quoted key of n bytes at t[i:],
// or nil: the key must be a key (not inside a string: the byte before it is no backslash)
// followed by a colon and a string. An unterminated string runs to the line's end (a record
// cut at the line limit). t[0] is the object's brace, so i > 0.
func fieldAt(t []byte, i, n int) []byte {
	if t[i-1] == '\\' {
		return nil
	}
	j := i + n
	for j < len(t) && (t[j] == ' ' || t[j] == '\t') {
		j++
	}
	if j >= len(t) || t[j] != ':' {
		return nil
	}
	j++
	for j < len(t) && (t[j] == ' ' || t[j] == '\t') {
		j++
	}
	if j >= len(t) || t[j] != '"' {
		return nil
	}
	j++
	k := j
	for k < len(t) && t[k] != '"' {
		if t[k] == '\\' {
			k++
		}
		k++
	}
	return t[j:min(k, len(t))]
}

// unescapeJSON appends the JSON string body v, unescaped, to dst, up to maxRecordBytes.
func unescapeJSON(dst, v []byte) []byte {
	start := len(dst)
	for i := 0; i < len(v) && len(dst)-start < maxRecordBytes; i++ {
		c := v[i]
		if c != '\\' || i+1 >= len(v) {
			dst = append(dst, c)
			continue
		}
		i++
		switch v[i] {
		case 'n', 'r':
			if len(dst) > start && dst[len(dst)-1] != ' ' {
				dst = append(dst, ' ')
			}
		case 't':
			dst = append(dst, '\t')
		case 'u':
			if i+4 < len(v) {
				if r, err := strconv.ParseUint(string(v[i+1:i+5]), 16, 32); err == nil {
					i += 4
					c := rune(r)
					if utf16.IsSurrogate(c) && i+6 < len(v) && v[i+1] == '\\' && v[i+2] == 'u' {
						// A character beyond the BMP, escaped as its UTF-16 pair.
						if lo, err := strconv.ParseUint(string(v[i+3:i+7]), 16, 32); err == nil {
							if pair := utf16.DecodeRune(c, rune(lo)); pair != utf8.RuneError {
								c = pair
								i += 6
							}
						}
					}
					if c >= 0x20 && c != 0x7f {
						dst = utf8.AppendRune(dst, c)
					}
					continue
				}
			}
			dst = append(dst, '\\', 'u')
		case 'b', 'f':
		default: // \" \\ \/
			dst = append(dst, v[i])
		}
	}
	return bytes.TrimRight(dst, " ")
}
