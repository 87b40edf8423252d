package main

import (
	"github.com/onecore-dev/onecore/internal/blobstore"
)

// normLocs normalizes the locations given to flag (see
// blobstore.Normalize): file:// URLs become local paths, object-storage
// URLs lose their query (kept as their bucket's settings), and an unknown
// scheme is a usage error (exit 2), never a local folder named "s3:".
func normLocs(flag string, ps []string) ([]string, error) {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		n, err := blobstore.Normalize(flag, p)
		if err != nil {
			return nil, usageError{err}
		}
		out = append(out, n)
	}
	return out, nil
}

// normLoc is normLocs for one location.
func normLoc(flag, p string) (string, error) {
	n, err := normLocs(flag, []string{p})
	if err != nil {
		return "", err
	}
	return n[0], nil
}

// normTrainData normalizes train --data: local paths, file:// and object
// storage (the trainers read objects through the readers and the token
// cache; an unknown scheme is a usage error).
func normTrainData(data []string) ([]string, error) {
	return normLocs("--data", data)
}
