package main

// spec.replication.failoverAfter as redis-webhook reads it: a port of humantime 2.4's
// parse_duration.

import (
	"errors"
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ---- durations: humantime 2.4's parse_duration, which redis-webhook uses ----

type humanDuration struct{ sec, nsec uint64 }

var errNotDuration = errors.New("not a duration")

func parseHumanDuration(s string) (humanDuration, error) {
	if s == "0" {
		return humanDuration{}, nil
	}
	p := &durationParser{src: s}
	return p.parse()
}

type durationParser struct {
	src string
	pos int // byte offset of the next character
}

func (p *durationParser) next() (rune, bool) {
	if p.pos >= len(p.src) {
		return 0, false
	}
	r, size := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += size
	return r, true
}

func isUnitChar(c rune) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c == 'µ' }

func (p *durationParser) parse() (humanDuration, error) {
	n, ok, err := p.firstDigit()
	if err != nil {
		return humanDuration{}, err
	}
	if !ok {
		return humanDuration{}, errNotDuration // empty
	}
	var out humanDuration
outer:
	for {
		var frac *[2]uint64 // numerator, denominator
		off := p.pos
	number:
		for {
			c, ok := p.next()
			if !ok {
				break
			}
			switch {
			case '0' <= c && c <= '9':
				if n, ok = mulAdd(n, 10, uint64(c-'0')); !ok {
					return out, errNotDuration
				}
			case unicode.IsSpace(c):
			case isUnitChar(c):
				break number
			case c == '.':
				f, err := p.fraction(&off)
				if err != nil {
					return out, err
				}
				frac = &f
				break number
			default:
				return out, errNotDuration
			}
			off = p.pos
		}
		start := off
		end := p.pos
	unit:
		for {
			c, ok := p.next()
			if !ok {
				break
			}
			switch {
			case '0' <= c && c <= '9':
				if err := p.addUnit(n, frac, start, end, &out); err != nil {
					return out, err
				}
				n = uint64(c - '0')
				continue outer
			case unicode.IsSpace(c):
				break unit
			case isUnitChar(c):
			default:
				return out, errNotDuration
			}
			end = p.pos
		}
		if err := p.addUnit(n, frac, start, end, &out); err != nil {
			return out, err
		}
		if n, ok, err = p.firstDigit(); err != nil {
			return out, err
		} else if !ok {
			return out, nil
		}
	}
}

func (p *durationParser) firstDigit() (uint64, bool, error) {
	for {
		c, ok := p.next()
		if !ok {
			return 0, false, nil
		}
		switch {
		case '0' <= c && c <= '9':
			return uint64(c - '0'), true, nil
		case unicode.IsSpace(c):
		default:
			return 0, false, errNotDuration
		}
	}
}

func (p *durationParser) fraction(off *int) ([2]uint64, error) {
	var numerator, denominator uint64 = 0, 1
	zeros := true
	var ok bool
loop:
	for {
		c, more := p.next()
		if !more {
			break
		}
		switch {
		case c == '0':
			if denominator, ok = mulAdd(denominator, 10, 0); !ok {
				return [2]uint64{}, errNotDuration
			}
			if !zeros {
				if numerator, ok = mulAdd(numerator, 10, 0); !ok {
					return [2]uint64{}, errNotDuration
				}
			}
		case '1' <= c && c <= '9':
			zeros = false
			if denominator, ok = mulAdd(denominator, 10, 0); !ok {
				return [2]uint64{}, errNotDuration
			}
			if numerator, ok = mulAdd(numerator, 10, uint64(c-'0')); !ok {
				return [2]uint64{}, errNotDuration
			}
		case unicode.IsSpace(c):
		case isUnitChar(c):
			break loop
		default:
			return [2]uint64{}, errNotDuration
		}
		*off = p.pos
	}
	if denominator == 1 {
		return [2]uint64{}, errNotDuration
	}
	return [2]uint64{numerator, denominator}, nil
}

// Seconds (or, below a second, nanoseconds) per unit, as humantime's Unit.
var durationUnits = map[string]struct {
	secs, nanos uint64
}{}

func init() {
	for names, u := range map[string]struct{ secs, nanos uint64 }{
		"nanos nsec ns":             {0, 1},
		"usec us µs":                {0, 1000},
		"millis msec ms":            {0, 1_000_000},
		"seconds second secs sec s": {1, 0},
		"minutes minute min mins m": {60, 0},
		"hours hour hr hrs h":       {3600, 0},
		"days day d":                {86400, 0},
		"weeks week wk wks w":       {86400 * 7, 0},
		"months month M":            {2_630_016, 0},
		"years year yr yrs y":       {31_557_600, 0},
	} {
		for _, name := range strings.Fields(names) {
			durationUnits[name] = u
		}
	}
}

func (p *durationParser) addUnit(n uint64, frac *[2]uint64, start, end int, out *humanDuration) error {
	u, ok := durationUnits[p.src[start:end]]
	if !ok {
		return errNotDuration
	}
	var sec, nsec uint64
	if u.secs > 0 {
		if sec, ok = mulAdd(n, u.secs, 0); !ok {
			return errNotDuration
		}
	} else if nsec, ok = mulAdd(n, u.nanos, 0); !ok {
		return errNotDuration
	}
	if err := addCurrent(sec, nsec, out); err != nil {
		return err
	}
	if frac == nil {
		return nil
	}
	num, den := frac[0], frac[1]
	var scale uint64
	inNanos := true
	switch {
	case u.secs == 0 && u.nanos == 1:
		return errNotDuration // fractions of a nanosecond
	case u.secs == 0:
		scale = u.nanos
	case u.secs == 1:
		scale = 1_000_000_000
	case u.secs == 60:
		scale = 60_000_000_000
	default:
		scale, inNanos = u.secs, false
	}
	v, ok := mulAdd(num, scale, 0)
	if !ok || v%den != 0 {
		return errNotDuration
	}
	if inNanos {
		return addCurrent(0, v/den, out)
	}
	return addCurrent(v/den, 0, out)
}

func addCurrent(sec, nsec uint64, out *humanDuration) error {
	nsec, carry := bits.Add64(out.nsec, nsec, 0)
	if carry != 0 {
		return errNotDuration
	}
	if nsec > 1_000_000_000 {
		if sec, carry = bits.Add64(sec, nsec/1_000_000_000, 0); carry != 0 {
			return errNotDuration
		}
		nsec %= 1_000_000_000
	}
	if sec, carry = bits.Add64(out.sec, sec, 0); carry != 0 {
		return errNotDuration
	}
	if nsec == 1_000_000_000 { // Duration::new carries a whole second of nanoseconds
		if sec, carry = bits.Add64(sec, 1, 0); carry != 0 {
			return errNotDuration
		}
		nsec = 0
	}
	*out = humanDuration{sec, nsec}
	return nil
}

// mulAdd returns a*b+c, or false when it overflows 64 bits.
func mulAdd(a, b, c uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return 0, false
	}
	sum, carry := bits.Add64(lo, c, 0)
	return sum, carry == 0
}
