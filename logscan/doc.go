// Package logscan is the single streaming read of a bundle's logs. Scan reads one log once,
// with bounded memory (LineReader cuts lines at the limit): each line is timed (Clock: the
// kubelet timestamp, else one the program printed, else the last one seen), cleaned of what
// terminals render (Clean) and given its shape (Shape: the line with its variable words, those
// holding a digit, masked), and handed to a visitor with the values of its variable words.
// ScanAll scans many logs in parallel. Words, Fold and the other word functions are the one
// definition of a word that shapes and the index's search share.
//
// Everything that looks at every line runs inside this one pass: the rules of package
// analyze and the templates of package index are visitors of the same scan. A scan stops
// within one read buffer (64 KiB) of its context being cancelled.
package logscan
