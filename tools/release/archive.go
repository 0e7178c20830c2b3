package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"time"
)

// A member is one file of an archive. Archives hold their members at the top level, in the order given: the
// registry runs "cmd": "./garuda" in the folder it extracted the archive into.
type member struct {
	name string
	mode int64
	data []byte
}

// writeTarGz writes a reproducible .tar.gz: the members in order, each owned by 0:0 with no user or group name and
// the time mtime; a gzip header with no file name and no time.
func writeTarGz(w io.Writer, members []member, mtime time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, m := range members {
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     m.name,
			Mode:     m.mode,
			Size:     int64(len(m.data)),
			ModTime:  mtime,
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(m.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// writeZip writes a reproducible .zip: the members in order, deflated, each with the time mtime (in UTC, so that
// the MS-DOS time does not depend on the machine's time zone) and its Unix mode.
func writeZip(w io.Writer, members []member, mtime time.Time) error {
	zw := zip.NewWriter(w)
	for _, m := range members {
		h := &zip.FileHeader{Name: m.name, Method: zip.Deflate, Modified: mtime.UTC()}
		h.SetMode(fs.FileMode(m.mode))
		f, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := f.Write(m.data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// memberNames lists the names of the members of a .tar.gz, or of a .zip where isZip.
func memberNames(data []byte, isZip bool) ([]string, error) {
	var names []string
	if isZip {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, err
		}
		for _, f := range zr.File {
			names = append(names, f.Name)
		}
		return names, nil
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		names = append(names, h.Name)
	}
}
