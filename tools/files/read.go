package files

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// ReadInput is read_file's input.
type ReadInput struct {
	Path   string `json:"path" jsonschema:"the file to read, relative to the working directory or absolute"`
	Offset int    `json:"offset,omitempty" jsonschema:"the line number to start at, counting from 1 (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many lines to return (default 2000)"`
}

const readDescription = `Read a file inside the working directory or an added directory (paths outside them are refused).
Returns the lines numbered like cat -n: the line number, a tab, then the line. At most 2000 lines are returned by default, and lines longer than 2000 bytes are cut; when the output is cut, a note at the end says where to continue with offset.
Use offset and limit to read part of a long file. PNG, JPEG, GIF and WebP images are returned as images. Other binary files are refused.
Read a file before you edit it with edit_file, and copy old_string from what this tool shows, without the line-number prefix.`

// ReadFile returns the read_file tool.
func (w *Workspace) ReadFile() *tool.Tool {
	return must(tool.New("read_file", readDescription, w.read))
}

// imageTypes are the media types the API accepts as image content.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

func (w *Workspace) read(ctx context.Context, in ReadInput) (any, error) {
	if in.Offset < 0 || in.Limit < 0 {
		return nil, errors.New("offset and limit must not be negative")
	}
	r, rel, err := w.locate(in.Path)
	if err != nil {
		return nil, err
	}
	f, fi, err := openFile(r, rel, in.Path, "reading")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(sniffBytes)
	if kind := http.DetectContentType(head); imageTypes[kind] {
		if fi.Size() > maxImageBytes {
			return nil, fmt.Errorf("%s is an image of %d bytes, over the %d bytes an image may have", in.Path, fi.Size(), maxImageBytes)
		}
		b, err := io.ReadAll(br)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", in.Path, err)
		}
		return llm.Image{MediaType: kind, Data: base64.StdEncoding.EncodeToString(b)}, nil
	} else if binary(head) {
		return nil, fmt.Errorf("%s is a binary file (%s, %d bytes); read_file shows only text and images", in.Path, kind, fi.Size())
	}
	return readLines(br, in, fi.Size())
}

// openFile opens the file at rel in r, which the model called path, for a
// file tool (its verb "reading" or "editing"). It must be a regular file,
// and that is checked on the file opened, not on the path before: a check
// first could be raced by a swap. Opening a named pipe blocks until a
// writer comes, whatever the call's context says, so the open does not
// wait (openFlags); the flag changes nothing for a regular file.
func openFile(r *root, rel, path, verb string) (*os.File, fs.FileInfo, error) {
	f, err := r.r.OpenFile(rel, openFlags, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, below
		}
		return nil, nil, fmt.Errorf("%s %s: %w", verb, path, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("%s %s: %w", verb, path, err)
	case fi.IsDir():
		err = fmt.Errorf("%s is a directory; use glob to list its files", path)
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file (%s); the file tools work only on files", path, fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readLines numbers lines offset to offset+limit of r.
func readLines(r *bufio.Reader, in ReadInput, size int64) (string, error) {
	first, limit := max(in.Offset, 1), in.Limit
	if limit == 0 {
		limit = DefaultReadLines
	}
	var b strings.Builder
	n, crlf := 0, false
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: keep its start, which is
			// longer than any line is shown, and skip the rest.
			line = bytes.Clone(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
		}
		if len(line) == 0 && err != nil {
			if err != io.EOF {
				return "", err
			}
			break
		}
		n++
		if n == 1 {
			crlf = bytes.HasSuffix(line, []byte("\r\n"))
		}
		if n < first {
			continue
		}
		if n >= first+limit || b.Len() > maxOutputBytes {
			fmt.Fprintf(&b, "\n[shown: lines %d to %d of a %d-byte file, which goes on; call read_file with offset %d to read more]", first, n-1, size, n)
			return b.String(), nil
		}
		line = bytes.TrimRight(line, "\r\n")
		fmt.Fprintf(&b, "%6d\t%s\n", n, cutLine(line))
		if err != nil {
			break
		}
	}
	switch {
	case n == 0:
		return "(the file is empty)", nil
	case n < first:
		return "", fmt.Errorf("offset %d is past the end: %s has %d lines", first, in.Path, n)
	}
	if crlf {
		b.WriteString("[the file has CRLF line endings; edit_file keeps them]\n")
	}
	return b.String(), nil
}

// cutLine returns line, cut to maxLineBytes on a UTF-8 boundary.
func cutLine(line []byte) string {
	if len(line) <= maxLineBytes {
		return string(line)
	}
	i := maxLineBytes
	for i > 0 && !utf8.RuneStart(line[i]) {
		i--
	}
	return string(line[:i]) + fmt.Sprintf("… [line cut at %d bytes]", i)
}

// binary reports whether a file starting with head is binary: it has a
// NUL byte or is not UTF-8, as git and grep decide.
func binary(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	// The sniffed bytes may end inside a character.
	for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
		if utf8.RuneStart(head[i]) {
			if !utf8.FullRune(head[i:]) {
				head = head[:i]
			}
			break
		}
	}
	return !utf8.Valid(head)
}

// must panics if a fixed tool definition fails to build: a bug, caught by
// the package's tests.
func must(t *tool.Tool, err error) *tool.Tool {
	if err != nil {
		panic("files: " + err.Error())
	}
	return t
}
