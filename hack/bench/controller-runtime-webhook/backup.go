package main

// The rules on spec.backup and spec.restore (crates/api/src/validation/backup.rs, with
// crates/api/src/backup.rs).

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// ---- spec.backup and spec.restore ----

const (
	maxKeep     int32 = 1000
	maxKeyBytes       = 1024
)

func backupViolations(spec *RedisSpec) []Violation {
	var out []Violation
	if b := spec.Backup; b != nil {
		out = append(out, destinationViolations("spec.backup.destination", &b.Destination)...)
		if b.Schedule != nil {
			if problem := scheduleProblem(*b.Schedule); problem != "" {
				out = append(out, Violation{"spec.backup.schedule",
					fmt.Sprintf("%s is not a cron schedule (five fields: minute hour day-of-month month day-of-week, or @hourly, @daily...): %s", shown(*b.Schedule), shown(problem)),
					rustQuote(*b.Schedule)})
			}
		}
		if keep := deref(b.Keep, defaultKeep); keep < 1 || keep > maxKeep {
			out = append(out, Violation{"spec.backup.keep", fmt.Sprintf("must be between 1 and %d, got %d", maxKeep, keep), itoa(keep)})
		}
	}
	r := spec.Restore
	if r == nil {
		return out
	}
	switch {
	case (r.BackupName != nil) == (r.Location != nil):
		out = append(out, Violation{"spec.restore", "must name exactly one of backupName or location", restoreValue(r)})
	case r.BackupName != nil:
		if !isDNS1123Subdomain(*r.BackupName) {
			out = append(out, Violation{"spec.restore.backupName", fmt.Sprintf("%s is not the name of a RedisBackup (a DNS-1123 subdomain)", shown(*r.BackupName)), rustQuote(*r.BackupName)})
		}
	default:
		location := *r.Location
		value := rustQuote(location)
		if bucket, key, ok := parseLocation(location); ok {
			if problem := bucketProblem(bucket); problem != "" {
				out = append(out, Violation{"spec.restore.location", fmt.Sprintf("bucket %s: %s", shown(bucket), problem), value})
			}
			if problem := keyProblem(key); problem != "" {
				out = append(out, Violation{"spec.restore.location", "key: " + problem, value})
			}
		} else {
			out = append(out, Violation{"spec.restore.location", fmt.Sprintf("%s is not of the form s3://<bucket>/<key>", shown(location)), value})
		}
		if spec.Backup == nil {
			out = append(out, Violation{"spec.restore.location", "is read with spec.backup.destination's endpoint and credentials: set spec.backup", value})
		}
	}
	return out
}

func restoreValue(r *RestoreSpec) string {
	if r == nil {
		return "None"
	}
	field := func(p *string) string {
		if p == nil {
			return "None"
		}
		return "Some(" + rustQuote(*p) + ")"
	}
	return "Some(RestoreSpec { backup_name: " + field(r.BackupName) + ", location: " + field(r.Location) + " })"
}

func restoreUpdateViolations(new, old *RedisSpec) []Violation {
	if restoreValue(new.Restore) == restoreValue(old.Restore) {
		return nil
	}
	return []Violation{{"spec.restore", "is honoured only when the Redis is created and cannot be set, changed or removed afterwards (create a new Redis to restore into)", restoreValue(new.Restore)}}
}

func parseLocation(location string) (string, string, bool) {
	rest, ok := strings.CutPrefix(location, "s3://")
	if !ok {
		return "", "", false
	}
	bucket, key, ok := strings.Cut(rest, "/")
	return bucket, key, ok && bucket != "" && key != ""
}

func destinationViolations(path string, d *BackupDestination) []Violation {
	s3 := &d.S3
	var out []Violation
	check := func(field, value, problem string) {
		if problem != "" {
			out = append(out, Violation{path + ".s3." + field, problem, rustQuote(value)})
		}
	}
	check("endpoint", s3.Endpoint, endpointProblem(s3.Endpoint))
	check("bucket", s3.Bucket, bucketProblem(s3.Bucket))
	if s3.Prefix != nil {
		check("prefix", *s3.Prefix, prefixProblem(*s3.Prefix))
	}
	if s3.Region != nil {
		check("region", *s3.Region, regionProblem(*s3.Region))
	}
	check("credentialsSecretRef.name", s3.CredentialsSecretRef.Name, secretNameProblem(s3.CredentialsSecretRef.Name))
	return out
}

func endpointProblem(endpoint string) string {
	rest, ok := strings.CutPrefix(endpoint, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(endpoint, "http://")
	}
	if !ok {
		return fmt.Sprintf("%s must start with http:// or https://", shown(endpoint))
	}
	authority := strings.TrimSuffix(rest, "/")
	if strings.ContainsAny(authority, "/?#") {
		return fmt.Sprintf("%s must be the service's address only (no path, query or fragment)", shown(endpoint))
	}
	if strings.Contains(authority, "@") {
		return "must not hold credentials: name them in credentialsSecretRef"
	}
	var host string
	var port *string
	if v6, ok := strings.CutPrefix(authority, "["); ok {
		h, after, closed := strings.Cut(v6, "]")
		if !closed {
			return fmt.Sprintf("%s has an unclosed [", shown(endpoint))
		}
		host = h
		if p, ok := strings.CutPrefix(after, ":"); ok {
			port = &p
		}
	} else if h, p, ok := strings.Cut(authority, ":"); ok {
		host, port = h, &p
	} else {
		host = authority
	}
	hostOK := host != ""
	for i := 0; i < len(host); i++ {
		hostOK = hostOK && (isAlnum(host[i]) || host[i] == '.' || host[i] == '-' || host[i] == ':')
	}
	if !hostOK {
		return fmt.Sprintf("%s has no valid host", shown(endpoint))
	}
	if port != nil {
		if p, err := parseUnsigned(*port, 16); err != nil || p == 0 {
			return fmt.Sprintf("%s has no valid port", shown(endpoint))
		}
	}
	return ""
}

func bucketProblem(bucket string) string {
	ok := len(bucket) >= 3 && len(bucket) <= 63 && isAlnum(bucket[0]) && isAlnum(bucket[len(bucket)-1]) && !strings.Contains(bucket, "..")
	for i := 0; ok && i < len(bucket); i++ {
		ok = isLowerAlnum(bucket[i]) || bucket[i] == '.' || bucket[i] == '-'
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("%s is not a bucket name (3-63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit)", shown(bucket))
}

func prefixProblem(prefix string) string {
	if len(prefix) > 512 {
		return fmt.Sprintf("must be at most 512 bytes, got %d", len(prefix))
	}
	return keyProblem(prefix + "x")
}

func keyProblem(key string) string {
	if len(key) > maxKeyBytes {
		return fmt.Sprintf("must be at most %d bytes, got %d", maxKeyBytes, len(key))
	}
	if strings.HasPrefix(key, "/") {
		return fmt.Sprintf("%s must not start with '/'", shown(key))
	}
	for _, c := range key {
		if unicode.Is(unicode.Cc, c) {
			return fmt.Sprintf("%s must not hold control characters", shown(key))
		}
	}
	for _, segment := range strings.Split(key, "/") {
		if segment == "." || segment == ".." {
			return fmt.Sprintf("%s must not hold a \".\" or \"..\" segment", shown(key))
		}
	}
	return ""
}

func regionProblem(region string) string {
	ok := len(region) >= 1 && len(region) <= 64
	for i := 0; ok && i < len(region); i++ {
		ok = isLowerAlnum(region[i]) || region[i] == '-'
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("%s is not a region (lowercase letters, digits and '-')", shown(region))
}

// scheduleProblem: why a schedule is not one a CronJob takes ("" when it is). redis-webhook
// reads schedules with the croner crate; its messages for an empty schedule and for a wrong
// number of fields are croner's, word for word. A schedule of five fields is checked here with
// the standard grammar (numbers, names, ranges, steps, lists, *, ?) and refused with a message of
// its own, which croner words differently: hack/bench/reviews.py sends no such schedule.
func scheduleProblem(schedule string) string {
	pattern := strings.ToUpper(strings.TrimSpace(schedule))
	if pattern == "" {
		return "CronPattern cannot be an empty string."
	}
	if strings.Contains(pattern, "@") {
		switch pattern {
		case "@YEARLY", "@ANNUALLY":
			pattern = "0 0 1 1 *"
		case "@MONTHLY":
			pattern = "0 0 1 * *"
		case "@WEEKLY":
			pattern = "0 0 * * 0"
		case "@DAILY", "@MIDNIGHT":
			pattern = "0 0 * * *"
		case "@HOURLY":
			pattern = "0 * * * *"
		}
	}
	fields := strings.Fields(pattern)
	if len(fields) != 5 {
		return "Invalid pattern: Pattern must have 5 fields when seconds are disallowed."
	}
	bounds := []struct {
		lo, hi int
		names  []string
	}{
		{0, 59, nil}, {0, 23, nil}, {1, 31, nil},
		{1, 12, []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
		{0, 7, []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
	}
	for i, field := range fields {
		b := bounds[i]
		value := func(text string) (int, bool) {
			for j, name := range b.names {
				if text == name {
					return j + b.lo, true
				}
			}
			n, err := strconv.Atoi(text)
			return n, err == nil && n >= b.lo && n <= b.hi
		}
		for _, part := range strings.Split(field, ",") {
			base, step, stepped := strings.Cut(part, "/")
			if stepped {
				if n, err := strconv.Atoi(step); err != nil || n < 1 {
					return "Invalid pattern: a step must be a whole number above 0."
				}
			}
			if base == "*" || (base == "?" && (i == 2 || i == 4)) {
				continue
			}
			from, to, ranged := strings.Cut(base, "-")
			a, okA := value(from)
			if !okA {
				return "Invalid pattern: a value is out of range or not a number."
			}
			if ranged {
				if z, okZ := value(to); !okZ || z < a {
					return "Invalid pattern: a range is out of range or reversed."
				}
			}
		}
	}
	return ""
}
