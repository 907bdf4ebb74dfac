package control

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
)

// checkPages checks the structure of a bbolt file by reading it (ReadAt,
// not bbolt's memory map), before bbolt reads it: the meta page of
// transaction txid, the freelist, every page below the high-water mark,
// then the tree from the root. bbolt trusts its pages: an element whose
// offset points past its page makes it read outside the memory map (a
// fault, in Tx.Check a fault on a goroutine of its own that nothing can
// recover), an overflow count of 2³¹ makes Tx.Check loop for hours, a
// branch that points back up makes a cursor loop for ever. This check
// finds those first, so that what bbolt reads afterwards is within bounds
// and acyclic.
//
// The layout is bbolt's (go.etcd.io/bbolt/internal/common, in the
// machine's byte order): a page header of 16 bytes (id u64, flags u16,
// count u16, overflow u32), then count elements of 16 bytes (branch: pos
// u32, ksize u32, pgid u64; leaf: flags u32, pos u32, ksize u32, vsize
// u32), each pos relative to its element; a meta after its header
// (magic, version, page size, flags u32; root pgid and sequence u64;
// freelist, pgid (the high-water mark), txid, checksum u64, the checksum
// an FNV-1a of the 56 bytes before it).
func checkPages(f io.ReaderAt, size int64, pageSize int, txid uint64) error {
	const (
		hdr          = 16
		branchFlag   = 0x01
		leafFlag     = 0x02
		freelistFlag = 0x10
		bucketFlag   = 0x01
		maxDepth     = 64
		noFreelist   = ^uint64(0)
	)
	le := binary.NativeEndian // as bbolt writes its structs
	var m struct{ root, freelist, hwm uint64 }
	found := false
	for _, off := range []int64{0, int64(pageSize)} {
		b := make([]byte, hdr+64)
		if _, err := f.ReadAt(b, off); err != nil {
			continue
		}
		meta := b[hdr:]
		h := fnv.New64a()
		h.Write(meta[:56])
		if le.Uint32(meta[0:]) == 0xED0CDAED && le.Uint32(meta[4:]) == 2 && le.Uint64(meta[56:]) == h.Sum64() &&
			le.Uint32(meta[8:]) == uint32(pageSize) && le.Uint64(meta[48:]) == txid {
			m.root, m.freelist, m.hwm = le.Uint64(meta[16:]), le.Uint64(meta[32:]), le.Uint64(meta[40:])
			found = true
			break
		}
	}
	switch {
	case !found:
		return errors.New("no meta page of the transaction bbolt opened")
	case m.hwm < 3 || m.hwm > uint64(size)/uint64(pageSize):
		return fmt.Errorf("the meta page says %d pages, the file holds %d", m.hwm, size/int64(pageSize))
	}
	hwm, psz := m.hwm, uint64(pageSize)

	// The freelist first: free pages are skipped in the scan.
	free := make(map[uint64]bool)
	if m.freelist != noFreelist {
		if m.freelist < 2 || m.freelist >= hwm {
			return fmt.Errorf("freelist: page %d: out of bounds (%d pages)", m.freelist, hwm)
		}
		h := make([]byte, hdr)
		if _, err := f.ReadAt(h, int64(m.freelist*psz)); err != nil {
			return fmt.Errorf("freelist: %w", err)
		}
		over := uint64(le.Uint32(h[12:]))
		if le.Uint64(h) != m.freelist || le.Uint16(h[8:]) != freelistFlag || m.freelist+over >= hwm {
			return fmt.Errorf("freelist: page %d is no freelist page, or runs past the last page", m.freelist)
		}
		b := make([]byte, (over+1)*psz)
		if _, err := f.ReadAt(b, int64(m.freelist*psz)); err != nil {
			return fmt.Errorf("freelist: %w", err)
		}
		start, n := uint64(hdr), uint64(le.Uint16(b[10:]))
		if n == 0xFFFF {
			n, start = le.Uint64(b[hdr:]), hdr+8
		}
		if n > (uint64(len(b))-start)/8 {
			return fmt.Errorf("freelist: %d ids do not fit in its %d bytes", n, len(b))
		}
		for i := range n {
			id := le.Uint64(b[start+8*i:])
			if id < 2 || id >= hwm || free[id] || (id >= m.freelist && id <= m.freelist+over) {
				return fmt.Errorf("freelist: page %d: out of bounds, listed twice, or the freelist itself", id)
			}
			free[id] = true
		}
	}

	// The scan: every page below the high-water mark is free, the start
	// of a page (its header, then as many overflow pages as it says) or
	// one of those overflow pages. Each branch and leaf is checked in
	// place (its elements within its bytes, an inline bucket's page
	// within its value), and what it points to noted, so that the tree
	// can be walked afterwards without reading the file again. The file
	// is read in order, a chunk at a time.
	type node struct {
		kind uint16   // branchFlag, leafFlag or freelistFlag
		to   []uint64 // children (a branch), bucket roots (a leaf)
	}
	nodes := make(map[uint64]node)
	var checkElems func(p []byte, what string, depth int, to *[]uint64) error
	checkElems = func(p []byte, what string, depth int, to *[]uint64) error {
		if depth > maxDepth {
			return fmt.Errorf("%s: inline buckets %d deep", what, depth)
		}
		if len(p) < hdr {
			return fmt.Errorf("%s: %d bytes, no page header", what, len(p))
		}
		flags, n := le.Uint16(p[8:]), uint64(le.Uint16(p[10:]))
		if hdr+16*n > uint64(len(p)) {
			return fmt.Errorf("%s: %d elements do not fit in its %d bytes", what, n, len(p))
		}
		switch {
		case flags == branchFlag && n == 0:
			return fmt.Errorf("%s: a branch without elements", what)
		case flags != branchFlag && flags != leafFlag:
			return fmt.Errorf("%s: neither a branch nor a leaf (flags %#x)", what, flags)
		}
		for i := range n {
			e := uint64(hdr + 16*i)
			if flags == branchFlag {
				pos, ks := uint64(le.Uint32(p[e:])), uint64(le.Uint32(p[e+4:]))
				if e+pos+ks > uint64(len(p)) {
					return fmt.Errorf("%s: element %d: its key lies past the page", what, i)
				}
				*to = append(*to, le.Uint64(p[e+8:]))
				continue
			}
			ef, pos := le.Uint32(p[e:]), uint64(le.Uint32(p[e+4:]))
			ks, vs := uint64(le.Uint32(p[e+8:])), uint64(le.Uint32(p[e+12:]))
			if e+pos+ks+vs > uint64(len(p)) {
				return fmt.Errorf("%s: element %d: its key or value lies past the page", what, i)
			}
			if ef&bucketFlag == 0 {
				continue
			}
			v := p[e+pos+ks : e+pos+ks+vs]
			switch {
			case len(v) < 16:
				return fmt.Errorf("%s: element %d: a bucket of %d bytes", what, i, len(v))
			case le.Uint64(v) == 0:
				if err := checkElems(v[16:], what+" (an inline bucket)", depth+1, to); err != nil {
					return err
				}
			default:
				*to = append(*to, le.Uint64(v))
			}
		}
		return nil
	}
	const chunkPages = 256
	chunk := make([]byte, 0, chunkPages*psz)
	var chunkStart uint64 // the first page in chunk
	for id := uint64(2); id < hwm; {
		if free[id] {
			id++
			continue
		}
		if id < chunkStart || id >= chunkStart+uint64(len(chunk))/psz {
			chunkStart, chunk = id, chunk[:min(chunkPages, hwm-id)*psz]
			if _, err := f.ReadAt(chunk, int64(id*psz)); err != nil {
				return fmt.Errorf("page %d: %w", id, err)
			}
		}
		p := chunk[(id-chunkStart)*psz:]
		over := uint64(le.Uint32(p[12:]))
		switch {
		case le.Uint64(p) != id:
			return fmt.Errorf("page %d: says it is page %d", id, le.Uint64(p))
		case id+over >= hwm:
			return fmt.Errorf("page %d: %d overflow pages, past the last page %d", id, over, hwm-1)
		}
		if uint64(len(p)) >= (over+1)*psz {
			p = p[:(over+1)*psz]
		} else {
			p = make([]byte, (over+1)*psz) // past the chunk: read on its own
			if _, err := f.ReadAt(p, int64(id*psz)); err != nil {
				return fmt.Errorf("page %d: %w", id, err)
			}
		}
		nd := node{kind: le.Uint16(p[8:])}
		if nd.kind != freelistFlag {
			if err := checkElems(p, fmt.Sprintf("page %d", id), 0, &nd.to); err != nil {
				return err
			}
		} else if id != m.freelist {
			return fmt.Errorf("page %d: a second freelist", id)
		}
		nodes[id] = nd
		for o := id + 1; o <= id+over; o++ {
			if free[o] {
				return fmt.Errorf("page %d: its overflow page %d is free", id, o)
			}
		}
		id += over + 1
	}

	// The walk: from the root, each page reached once, a page the scan
	// found the start of, no freelist, no deeper than maxDepth.
	seen := make(map[uint64]bool, len(nodes))
	var walk func(id uint64, depth int) error
	walk = func(id uint64, depth int) error {
		nd, ok := nodes[id]
		switch {
		case depth > maxDepth:
			return fmt.Errorf("page %d: deeper than %d levels", id, maxDepth)
		case id < 2 || id >= hwm:
			return fmt.Errorf("page %d: out of bounds (%d pages)", id, hwm)
		case free[id]:
			return fmt.Errorf("page %d: in use and free", id)
		case !ok:
			return fmt.Errorf("page %d: not the start of a page", id)
		case nd.kind == freelistFlag:
			return fmt.Errorf("page %d: the freelist, reached from the tree", id)
		case seen[id]:
			return fmt.Errorf("page %d: reached twice", id)
		}
		seen[id] = true
		for _, c := range nd.to {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(m.root, 0)
}
