// mediajobs-launcher: the launcher of warm sandboxes, the program bubblewrap (or a warm
// container) starts ahead of a job, which waits for the one command the host sends and runs it.
// It does what adapters/sandbox/launcher.go's launcherMain does, and the tests hold both to the
// same protocol; it is in C because a Go program's runtime takes 7 to 11 ms of CPU to start on
// a small VM, once per sandbox and so once per job, where this takes about one and a half.
//
//	mediajobs-launcher sandbox-launcher N[,R[,H]] PROGRAM...
//
// reads the command on descriptor N (3 or more: a pipe from bubblewrap; 0: stdin, a
// container's attach stream) until its end, after writing one byte to R when given (the host
// counts the sandbox ready then). With H, after the end marks it reads H to its end before it
// exits: the sandbox's teardown (the namespaces, torn down with their last process) waits until
// the host closes H, once the job's report is out, rather than taking the CPU from it.
// The command is sandbox.Launch.Encode's: NUL-ended fields, "mediajobs-launch-1", the program
// (one of the PROGRAMs), the end mark in lowercase hexadecimal ("" for none; the mark itself
// holds NULs), the count of rlimits, each one's resource and value, the count of arguments,
// each argument.
// Every rlimit is set, soft and hard alike; RLIMIT_CPU, FSIZE, NOFILE and CORE must be among
// them. Without an end mark the launcher execs the program in its place. With one, it runs the
// program as its child, then kills and waits for every process the program left behind, and
// writes the mark to stdout and the mark, the exit code and a newline to stderr: the host then
// knows that the output is all read and nothing of the program runs any more. Any error ends it
// with status 126 and a line on stderr.
//
// Build: scripts/launcher.sh (static, so that it runs in any image).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define LAUNCHER_ARG "sandbox-launcher"
#define MAGIC "mediajobs-launch-1"
#define MAX_LAUNCH_BYTES (1 << 20) // sandbox.MaxLaunchBytes
#define PROCS_ENV "GOMAXPROCS="    // sandbox.launcherProcsEnv: the launcher's alone

extern char **environ;

static void fail(const char *format, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void fail(const char *format, ...) {
	va_list ap;
	fputs("sandbox launcher: ", stderr);
	va_start(ap, format);
	vfprintf(stderr, format, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(126);
}

// number reads s as a decimal with no sign and no leading zero, at most max.
static int number(const char *s, uint64_t max, uint64_t *v) {
	uint64_t n = 0;
	if (*s == 0 || (s[0] == '0' && s[1] != 0)) {
		return 0;
	}
	for (; *s; s++) {
		if (*s < '0' || *s > '9') {
			return 0;
		}
		unsigned d = (unsigned)(*s - '0');
		if (n > (UINT64_MAX - d) / 10) {
			return 0;
		}
		n = n * 10 + d;
	}
	if (n > max) {
		return 0;
	}
	*v = n;
	return 1;
}

// unhex decodes s, lowercase hexadecimal, in place; it returns the length, or -1.
static long unhex(char *s) {
	size_t n = strlen(s);
	if (n % 2 != 0) {
		return -1;
	}
	for (size_t i = 0; i < n; i += 2) {
		int v = 0;
		for (size_t j = i; j < i + 2; j++) {
			char c = s[j];
			if (c >= '0' && c <= '9') {
				v = v * 16 + (c - '0');
			} else if (c >= 'a' && c <= 'f') {
				v = v * 16 + (c - 'a' + 10);
			} else {
				return -1;
			}
		}
		s[i / 2] = (char)v;
	}
	return (long)(n / 2);
}

// descriptor reads a descriptor argument.
static int descriptor(const char *s, int *fd) {
	uint64_t v;
	if (!number(s, 1 << 20, &v)) {
		return 0;
	}
	*fd = (int)v;
	return 1;
}

// readAll reads fd to its end; more than MAX_LAUNCH_BYTES is an error.
static char *readAll(int fd, size_t *len) {
	size_t size = 4096, n = 0;
	char *buf = malloc(size);
	if (buf == NULL) {
		fail("read command: out of memory");
	}
	for (;;) {
		if (n == size) {
			if (size > MAX_LAUNCH_BYTES) {
				fail("read command: longer than %d bytes", MAX_LAUNCH_BYTES);
			}
			size *= 2;
			if ((buf = realloc(buf, size)) == NULL) {
				fail("read command: out of memory");
			}
		}
		ssize_t r = read(fd, buf + n, size - n);
		if (r < 0 && errno == EINTR) {
			continue;
		}
		if (r < 0) {
			fail("read command: %s", strerror(errno));
		}
		if (r == 0) {
			break;
		}
		n += (size_t)r;
	}
	if (n > MAX_LAUNCH_BYTES) {
		fail("read command: longer than %d bytes", MAX_LAUNCH_BYTES);
	}
	*len = n;
	return buf;
}

// killLeftovers kills every process the program left behind and waits until each has exited,
// as launcher.go's does: kill(-1) reaches every process of the PID namespace but the launcher
// and the namespace's first, and each of them descends from the launcher, a subreaper, so
// ECHILD means none is left.
static void killLeftovers(void) {
	for (;;) {
		if (kill(-1, SIGKILL) < 0 && errno != ESRCH) {
			fail("kill what the program left: %s", strerror(errno));
		}
		if (wait4(-1, NULL, 0, NULL) < 0) {
			if (errno == ECHILD) {
				return;
			}
			if (errno != EINTR) {
				fail("wait for what the program left: %s", strerror(errno));
			}
		}
	}
}

// writeAll writes all of s to fd.
static void writeAll(int fd, const char *s, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR) {
			continue;
		}
		if (w <= 0) {
			exit(126);
		}
		s += w;
		n -= (size_t)w;
	}
}

int main(int argc, char **argv) {
	if (argc < 3 || strcmp(argv[1], LAUNCHER_ARG) != 0) {
		fputs("mediajobs-launcher: runs inside a warm sandbox only, started by mediajobs serve and worker\n", stderr);
		return 2;
	}
	// "N", "N,R" or "N,R,H": the command comes on N; one byte written to R says the launcher
	// waits; the end of H says it may exit after the end marks.
	char *arg = argv[2], *comma = strchr(arg, ','), *comma2 = NULL;
	int fd, ready = -1, hold = -1;
	if (comma != NULL) {
		*comma = 0;
		comma2 = strchr(comma + 1, ',');
		if (comma2 != NULL) {
			*comma2 = 0;
		}
	}
	if (!descriptor(arg, &fd) || (fd < 3 && fd != 0) ||
	    (comma != NULL && (!descriptor(comma + 1, &ready) || ready < 3 || ready == fd)) ||
	    (comma2 != NULL && (!descriptor(comma2 + 1, &hold) || hold < 3 || hold == fd || hold == ready))) {
		if (comma != NULL) {
			*comma = ',';
		}
		if (comma2 != NULL) {
			*comma2 = ',';
		}
		fail("bad command descriptor \"%s\"", arg);
	}
	// The program must not inherit H.
	if (hold >= 0 && fcntl(hold, F_SETFD, FD_CLOEXEC) < 0) {
		fail("hold descriptor: %s", strerror(errno));
	}
	// Not dumpable: a program of the same user cannot read the launcher's memory through /proc
	// (the end mark is in it), nor attach to it. The program it starts is dumpable again.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		fail("prctl: %s", strerror(errno));
	}
	if (ready >= 0) {
		ssize_t w;
		do {
			w = write(ready, "\1", 1);
		} while (w < 0 && errno == EINTR);
		int err = w == 0 ? EIO : errno;
		close(ready); // the program must not inherit it
		if (w != 1) {
			fail("tell the host it is ready: %s", strerror(err));
		}
	}
	size_t len;
	char *data = readAll(fd, &len);
	close(fd); // the program must not inherit the host's end of the command pipe
	if (fd == 0) {
		// The command came on stdin: the program's stdin is /dev/null, as in a cold run.
		int null = open("/dev/null", O_RDONLY);
		if (null < 0) {
			fail("stdin: %s", strerror(errno));
		}
		if (null != 0) {
			if (dup2(null, 0) < 0) {
				fail("stdin: %s", strerror(errno));
			}
			close(null);
		}
	}
	if (len == 0) {
		fail("no command: the sandbox was torn down unused");
	}

	// The fields, each ended by a NUL: the last byte must end the last one.
	if (data[len - 1] != 0) {
		fail("decode command: not a launch command");
	}
	size_t nfields = 0;
	for (size_t i = 0; i < len; i++) {
		nfields += data[i] == 0;
	}
	char **field = calloc(nfields, sizeof *field);
	if (field == NULL) {
		fail("decode command: out of memory");
	}
	for (size_t i = 0, f = 0; i < len; f++) {
		field[f] = data + i;
		i += strlen(data + i) + 1;
	}
	if (nfields < 5 || strcmp(field[0], MAGIC) != 0) {
		fail("decode command: not a launch command");
	}
	const char *program = field[1];
	char *end = field[2];
	long endLen = unhex(end);
	if (endLen < 0) {
		fail("decode command: not a launch command: end mark");
	}
	size_t at = 3;
	uint64_t nlimits, nargs;
	if (!number(field[at++], nfields, &nlimits) || nlimits > (nfields - at) / 2) {
		fail("decode command: not a launch command: rlimits");
	}
	struct {
		uint64_t resource, value;
	} *limits = calloc(nlimits + 1, sizeof *limits);
	if (limits == NULL) {
		fail("decode command: out of memory");
	}
	int cpu = 0, fsize = 0, nofile = 0, core = 0;
	for (uint64_t i = 0; i < nlimits; i++, at += 2) {
		if (!number(field[at], 1 << 16, &limits[i].resource) || !number(field[at + 1], UINT64_MAX, &limits[i].value)) {
			fail("decode command: not a launch command: rlimit \"%s\" \"%s\"", field[at], field[at + 1]);
		}
		cpu |= limits[i].resource == RLIMIT_CPU;
		fsize |= limits[i].resource == RLIMIT_FSIZE;
		nofile |= limits[i].resource == RLIMIT_NOFILE;
		core |= limits[i].resource == RLIMIT_CORE;
	}
	if (at >= nfields || !number(field[at++], nfields, &nargs) || nargs != nfields - at) {
		fail("decode command: not a launch command: arguments");
	}
	int allowed = 0;
	for (int i = 3; i < argc; i++) {
		allowed |= strcmp(argv[i], program) == 0;
	}
	if (!allowed) {
		fail("program \"%s\" is not allowed", program);
	}
	if (!cpu || !fsize || !nofile || !core) {
		fail("the command sets no rlimit %d", !cpu ? RLIMIT_CPU : !fsize ? RLIMIT_FSIZE : !nofile ? RLIMIT_NOFILE : RLIMIT_CORE);
	}
	for (uint64_t i = 0; i < nlimits; i++) {
		struct rlimit lim = {.rlim_cur = limits[i].value, .rlim_max = limits[i].value};
		if (setrlimit((int)limits[i].resource, &lim) < 0) {
			fail("rlimit %llu: %s", (unsigned long long)limits[i].resource, strerror(errno));
		}
	}

	char **args = calloc(nargs + 2, sizeof *args);
	size_t nenv = 0;
	for (char **e = environ; *e != NULL; e++) {
		nenv++;
	}
	char **env = calloc(nenv + 1, sizeof *env);
	if (args == NULL || env == NULL) {
		fail("out of memory");
	}
	args[0] = (char *)program;
	for (uint64_t i = 0; i < nargs; i++) {
		args[i + 1] = field[at + i];
	}
	nenv = 0;
	for (char **e = environ; *e != NULL; e++) {
		if (strncmp(*e, PROCS_ENV, strlen(PROCS_ENV)) != 0) {
			env[nenv++] = *e;
		}
	}
	if (endLen == 0) {
		execve(program, args, env);
		fail("exec %s: %s", program, strerror(errno));
	}
	if (getpid() > 2) {
		// killLeftovers signals every process this user may: only in a PID namespace of the
		// sandbox's own, whose first or second process the launcher is, are those the program's.
		fail("an end mark needs a PID namespace of the sandbox's own; this launcher is process %d", (int)getpid());
	}
	// The program's orphans become the launcher's children, not the PID namespace's first
	// process's: the launcher can then wait for every process the program left behind.
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		fail("prctl: %s", strerror(errno));
	}
	// glibc's posix_spawn tries clone3 first and falls back to clone on ENOSYS, which is what
	// the sandbox's seccomp filter answers clone3 with (seccomp.go's enosysCalls).
	pid_t pid;
	int err = posix_spawn(&pid, program, NULL, NULL, args, env);
	if (err != 0) {
		fail("start %s: %s", program, strerror(err));
	}
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fail("wait for %s: %s", program, strerror(errno));
		}
	}
	int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); // as bubblewrap reports
	killLeftovers();
	// Everything the program wrote is in the pipes ahead of these, and no process of it is
	// left: the host may hand the work directory back at the marks.
	char line[16];
	int n = snprintf(line, sizeof line, "%d\n", code);
	char *mark = malloc((size_t)endLen + (size_t)n); // on stderr in one write, as launcher.go's
	if (mark == NULL) {
		exit(126);
	}
	memcpy(mark, end, (size_t)endLen);
	memcpy(mark + endLen, line, (size_t)n);
	writeAll(1, end, (size_t)endLen);
	writeAll(2, mark, (size_t)endLen + (size_t)n);
	if (hold >= 0) {
		char b[64];
		ssize_t r;
		do {
			r = read(hold, b, sizeof b);
		} while (r > 0 || (r < 0 && errno == EINTR));
	}
	_exit(code);
}
