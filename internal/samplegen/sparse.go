package samplegen

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strconv"
)

// SparseForms are the ways a tar entry can say it is a sparse file: GNU's PAX formats 0.0, 0.1
// and 1.0, and the old GNU header of type 'S'.
var SparseForms = []string{"pax-0.0", "pax-0.1", "pax-1.0", "gnu-S"}

// TarFile is one regular file of a test tarball.
type TarFile struct {
	Name string
	Data string
}

// SparseTarGz returns a .tar.gz holding files, then an entry name of form (one of SparseForms)
// that is all hole: it declares size bytes and stores none of them. archive/tar's writer
// cannot write sparse files, so the headers are made byte by byte.
func SparseTarGz(files []TarFile, name, form string, size int64) ([]byte, error) {
	var tb bytes.Buffer
	for _, f := range files {
		tb.Write(tarBlock(f.Name, '0', int64(len(f.Data)), false))
		tb.WriteString(f.Data)
		pad(&tb)
	}
	n := strconv.FormatInt(size, 10)
	switch form {
	case "pax-0.0":
		paxHeader(&tb, name, paxRecord("GNU.sparse.size", n)+paxRecord("GNU.sparse.numblocks", "1")+
			paxRecord("GNU.sparse.offset", n)+paxRecord("GNU.sparse.numbytes", "0"))
		tb.Write(tarBlock(name, '0', 0, false))
	case "pax-0.1":
		paxHeader(&tb, name, paxRecord("GNU.sparse.size", n)+paxRecord("GNU.sparse.numblocks", "1")+
			paxRecord("GNU.sparse.map", n+",0"))
		tb.Write(tarBlock(name, '0', 0, false))
	case "pax-1.0":
		paxHeader(&tb, name, paxRecord("GNU.sparse.major", "1")+paxRecord("GNU.sparse.minor", "0")+
			paxRecord("GNU.sparse.name", name)+paxRecord("GNU.sparse.realsize", n))
		// The data starts with the map: one entry, at the end, of no bytes.
		tb.Write(tarBlock(name, '0', 512, false))
		tb.WriteString("1\n" + n + "\n0\n")
		pad(&tb)
	case "gnu-S":
		b := tarBlock(name, 'S', 0, true)
		copy(b[386:398], fmt.Sprintf("%011o\x00", size)) // the one entry: offset
		copy(b[398:410], fmt.Sprintf("%011o\x00", 0))    // and no bytes
		copy(b[483:495], fmt.Sprintf("%011o\x00", size)) // the real size
		checksum(b)
		tb.Write(b)
	default:
		return nil, fmt.Errorf("unknown sparse form %q", form)
	}
	tb.Write(make([]byte, 1024))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(tb.Bytes())
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return gz.Bytes(), nil
}

// tarBlock is a ustar (or old GNU) header block.
func tarBlock(name string, typeflag byte, size int64, gnu bool) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:108], "0000644\x00")
	copy(b[108:116], "0000000\x00")
	copy(b[116:124], "0000000\x00")
	copy(b[124:136], fmt.Sprintf("%011o\x00", size))
	copy(b[136:148], fmt.Sprintf("%011o\x00", 1700000000))
	b[156] = typeflag
	if gnu {
		copy(b[257:265], "ustar  \x00")
	} else {
		copy(b[257:265], "ustar\x0000")
	}
	checksum(b)
	return b
}

func checksum(b []byte) {
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
}

func paxHeader(tb *bytes.Buffer, name, records string) {
	tb.Write(tarBlock("PaxHeaders/"+name, 'x', int64(len(records)), false))
	tb.WriteString(records)
	pad(tb)
}

// paxRecord is "LEN key=value\n", LEN counting itself.
func paxRecord(k, v string) string {
	n := len(k) + len(v) + 3
	for {
		rec := fmt.Sprintf("%d %s=%s\n", n, k, v)
		if len(rec) == n {
			return rec
		}
		n = len(rec)
	}
}

func pad(tb *bytes.Buffer) {
	if r := tb.Len() % 512; r != 0 {
		tb.Write(make([]byte, 512-r))
	}
}
