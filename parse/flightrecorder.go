package parse

import (
	"io"
	"io/fs"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/frtrace"
)

// FlightRecord is a flight recorder dump of the bundle, decoded.
type FlightRecord struct {
	bundle.FlightRecord
	// Rank is the global rank the file's name ends with (torch writes <prefix><rank>); -1
	// when it has none (analyze then takes the pod's RANK).
	Rank int
	Dump *frtrace.Dump
}

// loadFlightRecords decodes the bundle's flight recorder dumps; one that cannot be read is a
// warning, and the rest are still matched.
func (m *Model) loadFlightRecords() {
	frs, warnings := bundle.FlightRecords(m.Bundle)
	m.Warnings = append(m.Warnings, warnings...)
	lim := frtrace.DefaultLimits()
	if max := m.Bundle.Limits.MaxFileBytes; max > 0 && int64(lim.Pickle.MaxBytes) > max {
		lim.Pickle.MaxBytes = int(max)
	}
	for _, fr := range frs {
		data, err := readBounded(m.Bundle.FS, fr.Path, int64(lim.Pickle.MaxBytes))
		if err != nil {
			m.warnf("%s: %v", fr.Path, err)
			continue
		}
		d, err := frtrace.Decode(data, lim)
		if err != nil {
			m.warnf("%s: not a readable flight recorder dump: %v", fr.Path, err)
			continue
		}
		rank, ok := frtrace.RankFromName(fr.Name)
		if !ok {
			rank = -1
		}
		m.FlightRecords = append(m.FlightRecords, FlightRecord{FlightRecord: fr, Rank: rank, Dump: d})
	}
}

// readBounded reads a file of the bundle, refusing one larger than max.
func readBounded(fsys fs.FS, name string, max int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &bundle.LimitError{What: "flight recorder dump", Limit: max, Kind: bundle.LimitFileBytes}
	}
	return data, nil
}
