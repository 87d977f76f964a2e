/* SPDX-License-Identifier: MIT */
/* `capture start FILE|stop`: a pcap of every frame the device sends and
 * receives, at run time. We open FILE with our own rights and pass the
 * descriptor: the daemon never opens a path a client names. The file
 * holds every user's payload: it is ours alone (0600), as the daemon
 * insists too. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"

/* the refusals both subcommands share: 0 when rc is none of them */
static int capture_refused(const struct ctl *c, int rc)
{
	if (rc == -EPERM)
		fprintf(stderr, "%s: %s: capture: only root or the daemon's user may capture\n",
			c->prog, c->dev);
	else if (rc == -EBUSY)
		fprintf(stderr, "%s: %s: capture: one is already running (capture stop)\n",
			c->prog, c->dev);
	else if (rc == -ENOENT)
		fprintf(stderr, "%s: %s: capture: none is running\n", c->prog, c->dev);
	else
		return 0;
	return CTL_FAILED;
}

static int capture_start(struct ctl *c, const char *file)
{
	int rc = ctl_open(c, c->dev ? c->dev : "uroce0");
	if (rc)
		return rc;
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	struct stat st;
	/* a file that existed with another mode (the daemon refuses anything
	 * but a regular file itself) */
	if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && (st.st_mode & 077) &&
	    fchmod(fd, 0600) < 0) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", c->prog, file, strerror(errno));
		ctl_close(c);
		return CTL_USAGE;
	}
	rc = ctl_call(c, UROCE_OP_CAPTURE_START, NULL, 0, NULL, 0, fd);
	close(fd); /* the daemon has its own copy */
	ctl_close(c);
	if (rc)
		return capture_refused(c, rc) ? CTL_FAILED : ctl_fail(c, "capture start", rc);
	if (c->json) {
		js_obj(NULL);
		js_str("device", c->dev);
		js_bool("capture", true);
		js_str("file", file);
		js_end();
		js_done();
	} else {
		printf("capture %s: writing %s\n", c->dev, file);
	}
	return CTL_OK;
}

static int capture_stop(struct ctl *c)
{
	struct uroce_capture_rep r;

	int rc = ctl_open(c, c->dev ? c->dev : "uroce0");
	if (rc)
		return rc;
	rc = ctl_call(c, UROCE_OP_CAPTURE_STOP, NULL, 0, &r, sizeof(r), -1);
	ctl_close(c);
	if (rc)
		return capture_refused(c, rc) ? CTL_FAILED : ctl_fail(c, "capture stop", rc);
	if (c->json) {
		js_obj(NULL);
		js_str("device", c->dev);
		js_bool("capture", false);
		js_u64("frames", r.frames);
		if (r.error)
			js_str("error", strerror(-r.error));
		else
			js_null("error");
		js_end();
		js_done();
	} else {
		printf("capture %s: stopped, %llu frames%s%s\n", c->dev,
		       (unsigned long long)r.frames, r.error ? ", write error: " : "",
		       r.error ? strerror(-r.error) : "");
	}
	return r.error ? CTL_FAILED : CTL_OK;
}

int ctl_cmd_capture(struct ctl *c, int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "start"))
		return capture_start(c, argv[2]);
	if (argc == 2 && !strcmp(argv[1], "stop"))
		return capture_stop(c);
	return -CTL_USAGE;
}
