/* SPDX-License-Identifier: MIT */
/* Loader and reader of the marking queue (ecn_queue.bpf.c): attaches it
 * to IFACE's tc egress (clsact, created if missing), configures it, then
 * prints one JSON line per interval until SIGTERM/SIGINT or stdin's end,
 * and detaches it.
 *
 *   ecn_queue OBJ IFACE RATE_MBPS KMIN KMAX PMAX_1024 LIMIT SEED INTERVAL_MS
 *
 * Each line: {"t": ms since start, "q": bytes queued now (the model,
 * drained to now), "qmax": the deepest since the last line, "pkts",
 * "bytes", "ect", "marked", "dropped" (totals), "flows": {"QPN": [bytes,
 * pkts, marked], ...}}. The first line is {"ready": 1}. Exit 0, 1 on an
 * error (one line on stderr). */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ecn_queue.h"

static volatile sig_atomic_t stop;

static void on_signal(int s)
{
	(void)s;
	stop = 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int map_fd(struct bpf_object *o, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(o, name);

	return m ? bpf_map__fd(m) : -1;
}

struct maps {
	int cfg, state, qmax, count, flows;
	__u64 rate_Bps;
};

static void sample(const struct maps *m, uint64_t t0)
{
	__u32 k = 0, key, next;
	struct ecnq_state s;
	struct ecnq_counters n;
	struct ecnq_flow f;
	__u64 qmax = 0, zero = 0, q;
	struct timespec ts;
	const char *sep = "";

	memset(&s, 0, sizeof(s));
	memset(&n, 0, sizeof(n));
	(void)bpf_map_lookup_elem_flags(m->state, &k, &s, BPF_F_LOCK);
	(void)bpf_map_lookup_elem(m->qmax, &k, &qmax);
	(void)bpf_map_update_elem(m->qmax, &k, &zero, BPF_ANY);
	(void)bpf_map_lookup_elem(m->count, &k, &n);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	__u64 kt = (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
	__u64 dr = kt > s.t ? (kt - s.t) * m->rate_Bps / 1000000000ull : 0;
	q = s.q > dr ? s.q - dr : 0;
	printf("{\"t\": %llu, \"q\": %llu, \"qmax\": %llu, \"pkts\": %llu, \"bytes\": %llu, "
	       "\"ect\": %llu, \"marked\": %llu, \"dropped\": %llu, \"flows\": {",
	       (unsigned long long)(now_ms() - t0), (unsigned long long)q,
	       (unsigned long long)qmax, (unsigned long long)n.pkts, (unsigned long long)n.bytes,
	       (unsigned long long)n.ect, (unsigned long long)n.marked,
	       (unsigned long long)n.dropped);
	for (int more = bpf_map_get_next_key(m->flows, NULL, &next) == 0; more;
	     more = bpf_map_get_next_key(m->flows, &key, &next) == 0) {
		key = next;
		if (bpf_map_lookup_elem(m->flows, &key, &f))
			continue;
		printf("%s\"%u\": [%llu, %llu, %llu]", sep, key & 0xffffffu,
		       (unsigned long long)f.bytes, (unsigned long long)f.pkts,
		       (unsigned long long)f.marked);
		sep = ", ";
	}
	printf("}}\n");
	fflush(stdout);
}

static int attach(struct bpf_object *o, struct bpf_tc_hook *hook)
{
	struct bpf_program *p = bpf_object__find_program_by_name(o, "ecn_queue");
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = 1, .priority = 1);
	int rc;

	if (!p)
		return -ENOENT;
	opts.prog_fd = bpf_program__fd(p);
	rc = bpf_tc_hook_create(hook);
	if (rc && rc != -EEXIST)
		return rc;
	return bpf_tc_attach(hook, &opts);
}

int main(int argc, char **argv)
{
	if (argc != 10) {
		fprintf(stderr, "usage: ecn_queue OBJ IFACE RATE_MBPS KMIN KMAX PMAX_1024 LIMIT "
			"SEED INTERVAL_MS\n");
		return 1;
	}
	unsigned ifindex = if_nametoindex(argv[2]);
	struct ecnq_cfg cfg = {
		.rate_Bps = strtoull(argv[3], NULL, 10) * 1000000ull / 8,
		.kmin = (__u32)strtoul(argv[4], NULL, 10),
		.kmax = (__u32)strtoul(argv[5], NULL, 10),
		.pmax_1024 = (__u32)strtoul(argv[6], NULL, 10),
		.limit = (__u32)strtoul(argv[7], NULL, 10),
	};
	struct ecnq_state st = { .rnd = strtoull(argv[8], NULL, 0) };
	int interval = atoi(argv[9]);
	if (!ifindex || !cfg.rate_Bps || cfg.kmax <= cfg.kmin || interval <= 0) {
		fprintf(stderr, "ecn_queue: bad arguments (interface %s)\n", argv[2]);
		return 1;
	}
	libbpf_set_print(NULL);
	struct bpf_object *o = bpf_object__open_file(argv[1], NULL);
	if (!o || bpf_object__load(o)) {
		fprintf(stderr, "ecn_queue: cannot load %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	struct maps m = { map_fd(o, "ecnq_cfg"), map_fd(o, "ecnq_state"), map_fd(o, "ecnq_qmax"),
			  map_fd(o, "ecnq_count"), map_fd(o, "ecnq_flows"), cfg.rate_Bps };
	__u32 k = 0;
	if (m.cfg < 0 || m.state < 0 || m.qmax < 0 || m.count < 0 || m.flows < 0 ||
	    bpf_map_update_elem(m.cfg, &k, &cfg, BPF_ANY) ||
	    bpf_map_update_elem(m.state, &k, &st, BPF_ANY)) {
		fprintf(stderr, "ecn_queue: maps: %s\n", strerror(errno));
		bpf_object__close(o);
		return 1;
	}
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)ifindex, .attach_point = BPF_TC_EGRESS);
	int rc = attach(o, &hook);
	if (rc) {
		fprintf(stderr, "ecn_queue: attach to %s egress: %s\n", argv[2], strerror(-rc));
		bpf_object__close(o);
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("{\"ready\": 1}\n");
	fflush(stdout);
	uint64_t t0 = now_ms();
	while (!stop) {
		struct pollfd pf = { 0, POLLIN, 0 };
		char b[64];
		if (poll(&pf, 1, interval) > 0 && read(0, b, sizeof(b)) <= 0)
			break;
		sample(&m, t0);
	}
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = 1, .priority = 1);
	(void)bpf_tc_detach(&hook, &opts);
	bpf_object__close(o);
	return 0;
}
