package logscan

// RankPrefix reads torchrun's "[rank5]:" line prefix, or returns -1: the index files lines
// by it and a log's first one names the rank of its pod.
func RankPrefix(text []byte) int {
	const p = "[rank"
	if len(text) < len(p)+2 || string(text[:len(p)]) != p {
		return -1
	}
	n, i := 0, len(p)
	for ; i < len(text) && i < len(p)+6 && text[i] >= '0' && text[i] <= '9'; i++ {
		n = n*10 + int(text[i]-'0')
	}
	if i == len(p) || i >= len(text) || text[i] != ']' {
		return -1
	}
	return n
}
