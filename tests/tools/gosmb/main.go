// gosmb - an SMB2/3 client that is neither Samba's nor impacket's, for the
// data tests: Debian's go-smb2 (golang-github-hirochachacha-go-smb2-dev),
// an implementation of its own that signs with HMAC-SHA256 and AES-CMAC,
// seals with AES-128-CCM and -GCM, and verifies the signature of every
// signed answer it gets (a synthesized answer smbaccel signed wrongly is an
// error here).  Each Write and Read call is one request, answered before
// the next is sent.
//
//	gosmb write|read HOST:PORT SHARE PATH BLOCK COUNT [options]
//	gosmb pattern SEED SIZE     the bytes a write with -s SEED writes
//
//	-u USER%PASS   NTLM user (default smbtest%testpass)
//	-w DOMAIN      NTLM domain (default SMBACCEL)
//	-s SEED        pattern seed (default 1)
//	-m DIALECT     2.0.2, 2.1, 3.0, 3.0.2 or 3.1.1 (default: the highest)
//	-S             require signing (the negotiate says so; every answer of
//	               the session must then be signed or sealed, and verify)
//	-p             read: a prefix (the file may go on after COUNT blocks)
//	-j N           N goroutines at once on the one session, the g-th
//	               writing (or reading) blocks g, g+N, g+2N, ... (WriteAt,
//	               ReadAt), so that up to N requests are in flight and
//	               arrive out of order (default 1: one after the other)
//	-F             write: finish as an editor's save does, each step after
//	               one more block written: Sync (FLUSH), Stat (QUERY_INFO;
//	               the size must count every block), ReadAt of the block
//	               just written (READ; checked against the pattern), Chmod
//	               0644 (QUERY_INFO and SET_INFO of the attributes),
//	               Truncate half a block off the end (SET_INFO); the file
//	               is then COUNT + 4 blocks less half a block of the
//	               pattern
//
// write: creates (or truncates) PATH and writes COUNT blocks of BLOCK bytes
// of the pattern; read: reads PATH in BLOCK-byte reads and checks every byte
// against the pattern, and that the file ends after COUNT blocks (unless
// -p).  Prints one line; exit 1 on any error or difference.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hirochachacha/go-smb2"
)

// pattern fills b with the stream of seed from offset off: byte i is the
// low byte of a 64-bit xorshift state stepped once per 8 bytes, shifted by
// i mod 8, so that any offset can be computed without the bytes before it.
func pattern(seed uint64, off int64, b []byte) {
	for i := range b {
		pos := uint64(off) + uint64(i)
		x := seed ^ (pos/8)*0x9E3779B97F4A7C15
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> (8 * (pos % 8)))
	}
}

// fanout runs do for blocks 0..count-1 from jobs goroutines at once, the
// g-th taking blocks g, g+jobs, g+2*jobs, ..., each with two buffers of
// block bytes of its own; it returns when all are done.
func fanout(jobs, count, block int, do func(off int64, b, w []byte)) {
	var wg sync.WaitGroup
	for g := 0; g < jobs; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			b, w := make([]byte, block), make([]byte, block)
			for i := g; i < count; i += jobs {
				do(int64(i)*int64(block), b, w)
			}
		}(g)
	}
	wg.Wait()
}

func parseSize(s string) int {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1024, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1024*1024, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		fail("bad size %q", s)
	}
	return n * mult
}

// saveFinish: the steps of -F, each after one more block of the pattern
// (blocks count .. count+3) written at the file's position.
func saveFinish(f *smb2.File, seed uint64, block, count int, buf []byte) {
	more := func(i int) {
		pattern(seed, int64(i)*int64(block), buf)
		if n, err := f.Write(buf); err != nil || n != block {
			fail("write %d at %d: %d bytes, %v", block, i*block, n, err)
		}
	}
	if err := f.Sync(); err != nil {
		fail("sync: %v", err)
	}
	more(count)
	fi, err := f.Stat()
	if err != nil {
		fail("stat: %v", err)
	}
	if fi.Size() != int64(count+1)*int64(block) {
		fail("stat after %d bytes written: size %d", (count+1)*block, fi.Size())
	}
	more(count + 1)
	got := make([]byte, block)
	if n, err := f.ReadAt(got, int64(count+1)*int64(block)); n != block {
		fail("read back %d at %d: %d bytes, %v", block, (count+1)*block, n, err)
	}
	for j := range got {
		if got[j] != buf[j] {
			fail("read back: byte %d differs: 0x%02x, want 0x%02x",
				(count+1)*block+j, got[j], buf[j])
		}
	}
	more(count + 2)
	if err := f.Chmod(0644); err != nil {
		fail("chmod: %v", err)
	}
	more(count + 3)
	if err := f.Truncate(int64(count+4)*int64(block) - int64(block/2)); err != nil {
		fail("truncate: %v", err)
	}
}

func fail(f string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "gosmb: "+f+"\n", a...)
	os.Exit(1)
}

// MS-SMB2 2.2.3 dialect numbers
var dialects = map[string]uint16{
	"2.0.2": 0x0202, "2.1": 0x0210, "3.0": 0x0300, "3.0.2": 0x0302,
	"3.1.1": 0x0311,
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == "pattern" {
		seed, err := strconv.ParseUint(os.Args[2], 10, 64)
		if err != nil {
			fail("bad seed %q", os.Args[2])
		}
		size := int64(parseSize(os.Args[3]))
		buf := make([]byte, 1<<16)
		for off := int64(0); off < size; off += int64(len(buf)) {
			n := int64(len(buf))
			if size-off < n {
				n = size - off
			}
			pattern(seed, off, buf[:n])
			os.Stdout.Write(buf[:n])
		}
		return
	}
	if len(os.Args) < 7 {
		fmt.Fprintln(os.Stderr, "usage: gosmb write|read HOST:PORT SHARE PATH BLOCK COUNT [-u USER%PASS] [-w DOMAIN] [-s SEED] [-m DIALECT] [-S]\n       gosmb pattern SEED SIZE")
		os.Exit(2)
	}
	op, addr, share, path := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	block := parseSize(os.Args[5])
	count, err := strconv.Atoi(os.Args[6])
	if err != nil || count < 0 {
		fail("bad count %q", os.Args[6])
	}
	fl := flag.NewFlagSet("gosmb", flag.ExitOnError)
	user := fl.String("u", "smbtest%testpass", "USER%PASS")
	domain := fl.String("w", "SMBACCEL", "domain")
	seed := fl.Uint64("s", 1, "seed")
	dialect := fl.String("m", "", "dialect")
	sign := fl.Bool("S", false, "require signing")
	prefix := fl.Bool("p", false, "read a prefix")
	jobs := fl.Int("j", 1, "concurrent writers")
	finish := fl.Bool("F", false, "finish the write as a save does")
	fl.Parse(os.Args[7:])
	up := strings.SplitN(*user, "%", 2)
	if len(up) != 2 {
		fail("-u wants USER%%PASS")
	}
	neg := smb2.Negotiator{RequireMessageSigning: *sign}
	if *dialect != "" {
		d, ok := dialects[*dialect]
		if !ok {
			fail("unknown dialect %q", *dialect)
		}
		neg.SpecifiedDialect = d
	}

	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		fail("connect %s: %v", addr, err)
	}
	defer conn.Close()
	d := &smb2.Dialer{
		Negotiator: neg,
		Initiator:  &smb2.NTLMInitiator{User: up[0], Password: up[1], Domain: *domain},
	}
	s, err := d.Dial(conn)
	if err != nil {
		fail("session setup: %v", err)
	}
	defer s.Logoff()
	fs, err := s.Mount(share)
	if err != nil {
		fail("tree connect %s: %v", share, err)
	}
	defer fs.Umount()

	buf := make([]byte, block)
	want := make([]byte, block)
	t0 := time.Now()
	switch op {
	case "write":
		f, err := fs.Create(path)
		if err != nil {
			fail("create %s: %v", path, err)
		}
		if *jobs <= 1 {
			for i := 0; i < count; i++ {
				pattern(*seed, int64(i)*int64(block), buf)
				if n, err := f.Write(buf); err != nil || n != block {
					fail("write %d at %d: %d bytes, %v", block, i*block, n, err)
				}
			}
			if *finish {
				saveFinish(f, *seed, block, count, buf)
			}
		} else {
			fanout(*jobs, count, block, func(off int64, b, _ []byte) {
				pattern(*seed, off, b)
				if n, err := f.WriteAt(b, off); err != nil || n != block {
					fail("write %d at %d: %d bytes, %v", block, off, n, err)
				}
			})
		}
		if err := f.Close(); err != nil {
			fail("close %s: %v", path, err)
		}
	case "read":
		f, err := fs.Open(path)
		if err != nil {
			fail("open %s: %v", path, err)
		}
		check := func(b, w []byte, off int64) {
			pattern(*seed, off, w)
			for j := range b {
				if b[j] != w[j] {
					fail("byte %d differs: 0x%02x, want 0x%02x", off+int64(j), b[j], w[j])
				}
			}
		}
		if *jobs <= 1 {
			for i := 0; i < count; i++ {
				if _, err := io.ReadFull(f, buf); err != nil {
					fail("read %d at %d: %v", block, i*block, err)
				}
				check(buf, want, int64(i)*int64(block))
			}
		} else {
			fanout(*jobs, count, block, func(off int64, b, w []byte) {
				if n, err := f.ReadAt(b, off); n != block {
					fail("read %d at %d: %d bytes, %v", block, off, n, err)
				}
				check(b, w, off)
			})
			if _, err := f.Seek(int64(count)*int64(block), io.SeekStart); err != nil {
				fail("seek: %v", err)
			}
		}
		if n, err := f.Read(buf[:1]); !*prefix && (n != 0 || err != io.EOF) {
			fail("no end of file after %d bytes (%d more, %v)", count*block, n, err)
		}
		if err := f.Close(); err != nil {
			fail("close %s: %v", path, err)
		}
	default:
		fail("unknown operation %q", op)
	}
	secs := time.Since(t0).Seconds()
	fmt.Printf("gosmb %s %s: %d x %d bytes in %.3f s (%.4g MB/s)\n", op, path,
		count, block, secs, float64(count)*float64(block)/secs/1e6)
}
