/* Interrupts while the process holds a lock: held back until its locks are released. */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Interrupts (SIGINT, SIGTERM, SIGHUP) and a closed output pipe (SIGPIPE) while the process
 * holds a lock, or is writing one: dying there would leave Pulumi's lock on the stack (every
 * teammate's `pulumi up` refused until someone runs `statetool unlock`). The library counts
 * its lock objects (the locks hook: cli_locks_busy, env.c); while there are any, an interrupt
 * is held back: the command finishes what it is doing, releases its locks, and the process
 * then ends by that signal (cli_interrupt_exit: exit 130, 143, 129). A second interrupt ends
 * it at once, as the first did before. A SIGPIPE while locked is ignored, and so is every
 * later one: the output is gone, its writes fail (EPIPE), the command goes on and exits with
 * its own status. Without a lock the default applies, as for any program. While `edit`'s
 * editor runs, SIGINT is the editor's (cli_editor_running; git does the same). */
volatile sig_atomic_t cli_locks_busy;
static volatile sig_atomic_t held_back, pipe_gone, editor_running;

static void on_interrupt(int sig)
{
	static const char msg[] = "\nstatetool: interrupted while holding a lock: finishing the change "
				  "in progress, then exiting with its locks released (interrupt "
				  "again to stop at once, leaving them)\n";
	int saved = errno; /* write(2) below must not change what the command sees */
	ssize_t w;

	if (sig == SIGPIPE && (cli_locks_busy || pipe_gone)) {
		pipe_gone = 1;
		return;
	}
	if (sig == SIGINT && editor_running)
		return;
	if (sig == SIGPIPE || !cli_locks_busy || held_back) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	held_back = sig;
	w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)w;
	errno = saved;
}

void cli_catch_interrupts(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sa.sa_flags = SA_RESTART;
	sigfillset(&sa.sa_mask); /* one handler at a time: a second signal sees the first */
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old;
		/* a signal the parent ignores (nohup, a shell's background job) stays ignored */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	}
}

void cli_editor_running(int on)
{
	editor_running = on;
}

void cli_interrupt_exit(void)
{
	int sig = held_back;
	if (!sig)
		return;
	fflush(stdout);
	fflush(stderr);
	signal(sig, SIG_DFL);
	raise(sig);
}
