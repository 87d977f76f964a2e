/* SPDX-License-Identifier: MIT */
/* uroced's QP1: CM MADs arriving on a real DPDK port (net_pcap: frames read
 * from a pcap, frames sent written to one) reach the IB CM engine, which
 * answers them on the wire as the kernel does:
 *  - a REQ for a service nobody listens on: REJ reason 8 (invalid service
 *    ID) to the sender, naming its comm ID, with the REQ's transaction ID;
 *  - a DREQ for a connection the device never had: DREP;
 *  - a truncated MAD: nothing, counted as drop "gsi-mad".
 * The test waits for the drop counter (the last frame) through the control
 * socket, so no verdict depends on timing.
 * Usage: test_ibcm_daemon <uroced>. */
#include <pcap/pcap.h>

#include "emu_test.h"
#include "wire.h"
#include "pcapw.h"

#define OUR_MAC  "02:00:00:00:00:11"
#define OUR_IP   "10.0.0.1"
#define SID      0x0000000001061092ull /* RDMA_PS_TCP, port 4242 */
#define REQ_ID   0xA1A1A1A1u
#define REQ_TID  0x0000000100000077ull
#define DREQ_LID 0xB2B2B2B2u
#define DREQ_RID 0xC3C3C3C3u

static const uint8_t our_mac[6] = { 2, 0, 0, 0, 0, 0x11 };
static const uint8_t peer_mac[6] = { 2, 0, 0, 0, 0, 0x22 };

static void gid4(struct wire_gid *g, uint8_t last)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = g->raw[11] = 0xff;
	g->raw[12] = 10;
	g->raw[15] = last;
}

static void put_mad(struct pcapw *w, struct wire_cm_msg *m, uint16_t attr, uint64_t tid,
		    uint32_t mad_len, unsigned n)
{
	uint8_t mad[WIRE_MAD_LEN], frame[1024];
	struct wire_mad_hdr h;
	struct wire_pkt p;
	size_t len;

	m->attr = attr;
	wire_mad_hdr_init_cm(&h, attr, tid);
	REQUIRE(wire_mad_encode(mad, &h, m) == 0, "encode");
	wire_gsi_pkt_init(&p, 4, mad, n);
	p.payload_len = mad_len;
	memcpy(p.dmac, our_mac, 6);
	memcpy(p.smac, peer_mac, 6);
	gid4(&p.ip.src, 2);
	gid4(&p.ip.dst, 1);
	REQUIRE(wire_build(&p, frame, sizeof(frame), 0, &len) == 0, "build");
	REQUIRE(pcapw_write(w, frame, len, 1795305600000000000ull + n * 1000ull) == 0, "write");
}

static void write_input(const char *path)
{
	struct pcapw *w;
	struct wire_cm_msg m;

	REQUIRE(pcapw_open(&w, path, 0) == 0, "pcap %s", path);
	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = REQ_ID;
	m.v[WIRE_CM_F_SERVICE_ID] = SID;
	m.v[WIRE_CM_F_LOCAL_CA_GUID] = 0x0200000000002222ull;
	m.v[WIRE_CM_F_LOCAL_QPN] = 0x123;
	m.v[WIRE_CM_F_PATH_MTU] = 3;
	m.v[WIRE_CM_F_PKEY] = 0xffff;
	m.v[WIRE_CM_F_MAX_CM_RETRIES] = 15;
	m.v[WIRE_CM_F_PRI_LOCAL_LID] = m.v[WIRE_CM_F_PRI_REMOTE_LID] = 0xffff;
	m.v[WIRE_CM_F_PRI_HOP_LIMIT] = 64;
	m.v[WIRE_CM_F_PRI_LOCAL_ACK_TIMEOUT] = 19;
	gid4((struct wire_gid *)m.gid[0], 2);
	gid4((struct wire_gid *)m.gid[1], 1);
	put_mad(w, &m, WIRE_CM_ATTR_REQ, REQ_TID, WIRE_MAD_LEN, 1);
	memset(&m, 0, sizeof(m));
	m.v[WIRE_CM_F_LOCAL_COMM_ID] = DREQ_LID;
	m.v[WIRE_CM_F_REMOTE_COMM_ID] = DREQ_RID;
	m.v[WIRE_CM_F_REMOTE_QPN] = 0x456;
	put_mad(w, &m, WIRE_CM_ATTR_DREQ, 0x99, WIRE_MAD_LEN, 2);
	put_mad(w, &m, WIRE_CM_ATTR_DREQ, 0x9a, 200, 3); /* truncated */
	REQUIRE(pcapw_close(w) == 0, "close");
}

static uint64_t gsi_drops(struct t_client *c)
{
	static struct uroce_query_stats_rep r;
	struct uroce_query_stats_req q = { 0, 0 };
	int rc = t_call(c, UROCE_OP_QUERY_STATS, &q, sizeof(q), NULL, 0, &r, sizeof(r), NULL, NULL);

	REQUIRE(rc == 0, "query stats: %d", rc);
	for (uint32_t i = 0; i < r.port.ndrops && i < UROCE_STATS_DROP_MAX; i++)
		if (!strncmp(r.port.drop_name[i], "gsi-mad", UROCE_STATS_NAME_LEN))
			return r.port.drops[i];
	REQUIRE(0, "no gsi-mad drop counter");
	return 0;
}

/* The GSI frames uroced sent: REJ and DREP checked, others counted. */
static void check_output(const char *path)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(path, err);
	struct pcap_pkthdr *ph;
	const u_char *data;
	unsigned rej = 0, drep = 0, other = 0;

	REQUIRE(pc, "open %s: %s", path, err);
	while (pcap_next_ex(pc, &ph, &data) == 1) {
		struct wire_pkt p;
		struct wire_mad_hdr h;
		struct wire_cm_msg m;
		if (wire_parse(data, ph->caplen, &p) != WIRE_OK || !wire_pkt_is_gsi(&p))
			continue; /* ARP, IGMP ... */
		CHECK(wire_gsi_pkt_decode(&p, WIRE_MAD_STRICT, &h, &m) == WIRE_MAD_OK, "MAD decodes");
		CHECK(!memcmp(p.dmac, peer_mac, 6), "answer to the sender's MAC");
		CHECK(p.ip.dst.raw[15] == 2 && p.ip.src.raw[15] == 1, "answer to the sender's IP");
		CHECK(p.deth.sqpn == 1 && p.bth.dqpn == 1, "QP1 to QP1");
		if (h.attr_id == WIRE_CM_ATTR_REJ) {
			rej++;
			CHECK(m.v[WIRE_CM_F_REJ_REASON] == WIRE_CM_REJ_INVALID_SERVICE_ID,
			      "reason %u", (unsigned)m.v[WIRE_CM_F_REJ_REASON]);
			CHECK(m.v[WIRE_CM_F_REMOTE_COMM_ID] == REQ_ID, "REJ names the REQ");
			CHECK(m.v[WIRE_CM_F_MSG_REJECTED] == 0, "REQ rejected");
			CHECK(h.tid == REQ_TID, "REJ tid %#llx", (unsigned long long)h.tid);
		} else if (h.attr_id == WIRE_CM_ATTR_DREP) {
			drep++;
			CHECK(m.v[WIRE_CM_F_LOCAL_COMM_ID] == DREQ_RID &&
			      m.v[WIRE_CM_F_REMOTE_COMM_ID] == DREQ_LID, "DREP comm IDs");
			CHECK(h.tid == 0x99, "DREP tid");
		} else {
			other++;
		}
	}
	pcap_close(pc);
	CHECK(rej == 1, "%u REJ", rej);
	CHECK(drep == 1, "%u DREP", drep);
	CHECK(other == 0, "%u other MADs", other);
}

int main(int argc, char **argv)
{
	struct t_daemon d;
	struct t_client c;
	char dir[] = "/tmp/uroce-ibcm-XXXXXX", in[64], out[64], dev[256];

	if (argc != 2) {
		fprintf(stderr, "usage: %s <uroced>\n", argv[0]);
		return 2;
	}
	alarm(120);
	REQUIRE(mkdtemp(dir), "mkdtemp");
	snprintf(in, sizeof(in), "%s/in.pcap", dir);
	snprintf(out, sizeof(out), "%s/out.pcap", dir);
	write_input(in);
	snprintf(dev, sizeof(dev), "uroce0,port=net_pcap0,rx_pcap=%s,tx_pcap=%s,ip=%s,mac=%s", in,
		 out, OUR_IP, OUR_MAC);
	const char *args[] = { "--dev", dev, NULL };
	int rc = t_daemon_start(&d, argv[1], false, args);
	if (rc) {
		fprintf(stderr, "FAIL: uroced did not start: %d\n", rc);
		t_daemon_stop_now(&d);
		unlink(in);
		rmdir(dir);
		return 1;
	}
	REQUIRE(t_client_open(&c, d.sock) == 0, "client");
	/* the truncated MAD is the last frame: once it is counted, the REQ
	 * and the DREQ before it have been answered */
	uint64_t end = t_now_ms() + 60000;
	while (gsi_drops(&c) < 1 && t_now_ms() < end)
		usleep(20000);
	CHECK(gsi_drops(&c) == 1, "gsi-mad drops %llu", (unsigned long long)gsi_drops(&c));
	t_client_close(&c);
	rc = t_daemon_stop(&d); /* the pcap port writes its file when it closes */
	CHECK(rc == 0, "daemon exit %d", rc);
	check_output(out);
	t_rmdir(&d);
	unlink(in);
	unlink(out);
	rmdir(dir);
	t_cur = NULL;
	if (t_failures)
		fprintf(stderr, "%d failures\n", t_failures);
	return t_failures ? 1 : 0;
}
