// Parsers of /proc task files (see proc_parse.h). async-signal-safe: in-place parsing only.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "proc_parse.h"

#include <errno.h>
#include <string.h>

int sw_parse_thread_stat(const char *buf, int32_t tid, sw_thread_stat_t *out) {
    // comm may itself contain ") " and spaces, so the name ends at the LAST ')'.
    const char *open_paren = strchr(buf, '(');
    const char *close_paren = strrchr(buf, ')');
    if (open_paren == NULL || close_paren == NULL || close_paren < open_paren) return -EPROTO;

    memset(out, 0, sizeof *out);
    out->tid = tid;
    size_t name_len = (size_t)(close_paren - open_paren - 1);
    if (name_len > sizeof out->name - 1) name_len = sizeof out->name - 1;
    memcpy(out->name, open_paren + 1, name_len);
    out->name[name_len] = '\0';

    // Field 3 (state) is the first token after ") "; fields are 1-based as in proc(5).
    const char *p = skip_spaces(close_paren + 1);
    int field = 3;
    bool have_processor = false;
    while (*p != '\0' && *p != '\n' && field <= 39) {
        if (field == 3) {
            out->state = *p;
        } else if (field == 10 || field == 12 || field == 14 || field == 15 || field == 22) {
            uint64_t v;
            if (parse_uint64(p, &v) == NULL) return -EPROTO;
            if (field == 10) out->minflt = v;
            else if (field == 12) out->majflt = v;
            else if (field == 14) out->utime_ticks = v;
            else if (field == 15) out->stime_ticks = v;
            else out->start_ticks = v;
        } else if (field == 39) {
            int64_t v;
            if (parse_int64(p, &v) == NULL) return -EPROTO;
            out->last_cpu = (int32_t)v;
            have_processor = true;
        }
        p = skip_spaces(skip_token(p));
        field++;
    }
    return have_processor ? 0 : -EPROTO;
}

// One signal mask line of a `status` file ("\nSigBlk:", "\nSigPnd:").
static int parse_status_mask(const char *buf, const char *key, uint64_t *mask) {
    const char *line = strstr(buf, key);
    if (line == NULL) return -EPROTO;
    if (parse_hex(skip_spaces(line + strlen(key)), mask) == NULL) return -EPROTO;
    return 0;
}

int sw_parse_sigblk(const char *buf, uint64_t *mask) { return parse_status_mask(buf, "\nSigBlk:", mask); }

int sw_parse_sigpnd(const char *buf, uint64_t *mask) { return parse_status_mask(buf, "\nSigPnd:", mask); }

int sw_parse_thread_syscall(const char *buf, sw_thread_syscall_t *out) {
    memset(out, 0, sizeof *out);
    if (strncmp(buf, "running", 7) == 0) {
        out->nr = -2;
        return 0;
    }
    const char *p = parse_int64(buf, &out->nr);
    if (p == NULL) return -EPROTO;
    // "-1 sp pc": blocked in the kernel but not in a syscall (e.g. a page fault); no args.
    uint64_t values[8];
    int want = out->nr == -1 ? 2 : 8;
    for (int i = 0; i < want; i++) {
        p = parse_hex(skip_spaces(p), &values[i]);
        if (p == NULL) return -EPROTO;
    }
    if (out->nr == -1) {
        out->sp = values[0];
        out->pc = values[1];
    } else {
        for (int i = 0; i < 6; i++) out->args[i] = values[i];
        out->sp = values[6];
        out->pc = values[7];
    }
    return 0;
}

int sw_parse_schedstat(const char *buf, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *timeslices) {
    const char *p = parse_uint64(skip_spaces(buf), run_ns);
    if (p != NULL) p = parse_uint64(skip_spaces(p), wait_ns);
    if (p != NULL) p = parse_uint64(skip_spaces(p), timeslices);
    return p == NULL ? -EPROTO : 0;
}

#endif // SW_PLATFORM_SAMPLES
