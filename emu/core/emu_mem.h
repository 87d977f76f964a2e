/* SPDX-License-Identifier: MIT */
/* uroced core: application memory. Payload moves through the client's
 * own /proc/<pid>/mem (mem.c) or, for MRs the daemon maps, by memcpy
 * (mrmap.c); ODP access checks (vma.c, odp.c); the stall guard of the
 * engine thread; writes deferred over an RX burst. */
#ifndef EMU_MEM_H
#define EMU_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "emu_obj.h"

/* ------------------------------------------------------------------ */
/* Application memory                                                  */
/* ------------------------------------------------------------------ */
/* preadv/pwritev on c->mem_fd (or memcpy when there is none and c->pid is
 * our own pid, as in tests). 0 or -errno (-EFAULT for a short transfer). */
int emu_mem_read(struct emu_ctx *c, void *dst, uint64_t addr, size_t len);
/* Bind c to its process's memory: fd must be a read-write /proc/<pid>/mem
 * of c->pid itself (the client opens /proc/self/mem), maps_fd (-1: none)
 * a read-only /proc/<pid>/maps of it (vma.c). On success c owns both; 0,
 * -EINVAL (no fd), -EACCES (not the peer's own) or -ESRCH (a peer in a pid
 * namespace the daemon cannot see: another container). */
int emu_mem_attach(struct emu_ctx *c, int fd, int maps_fd);
/* the client process as a pidfd (SO_PEERPIDFD, else its pid), -1: none */
int emu_ctx_pidfd(const struct emu_ctx *c);
int emu_mem_write(struct emu_ctx *c, uint64_t addr, const void *src, size_t len);
/* vma.c: open c's /proc/<pid>/maps (0 or -errno); is all of [addr, addr +
 * len) mapped by c's process with read (write: write) permission? 0, else
 * -EFAULT. /proc/<pid>/mem reaches pages even where they are not
 * (FOLL_FORCE). A client whose maps we do not have is not asked (it gave
 * none and we may not open it: only its own memory is at stake). */
int emu_vma_attach(struct emu_ctx *c);
int emu_vma_allowed(struct emu_ctx *c, uint64_t addr, uint64_t len, bool write);
/* the same from maps text read with pread from fd (kernels before 6.11) */
int emu_vma_scan(int fd, uint64_t addr, uint64_t len, bool write);
/* the mapping of c's process at addr, asked through the maps descriptor
 * bound at HELLO (never opened by pid): 0, or -EACCES (none, or that
 * address space is gone) */
struct uroce_vma;
int emu_vma_get(struct emu_ctx *c, uint64_t addr, struct uroce_vma *v);
/* may the daemon read (write) [proc, proc + len) of mr's process? Always
 * for an MR that is not ODP (checked at registration, as pinning does);
 * for an ODP one only where the process maps it so now. 0 or -EFAULT. */
int emu_mr_odp_access(const struct emu_mr *mr, uint64_t proc, uint64_t len, bool write);
/* Batched: local iovecs against remote ranges {addr, len} of mr, which
 * decides how the device reaches them (docs/verbs.md, "Registered
 * memory"): its pieces the daemon maps (memcpy), the pages the client
 * pinned (pin.c), the address as the process maps it now (pvm.c, for
 * registrations the kernel could not pin), or, for ODP registrations and
 * for mr NULL (a bare address of c's process), /proc/<pid>/mem. */
struct emu_rvec { uint64_t addr; uint64_t len; struct emu_mr *mr; };
int emu_mem_readv(struct emu_ctx *c, const struct iovec *local, unsigned nlocal,
		  const struct emu_rvec *remote, unsigned nremote);
int emu_mem_writev(struct emu_ctx *c, const struct iovec *local, unsigned nlocal,
		   const struct emu_rvec *remote, unsigned nremote);
/* [addr, addr + len) of mr: one range */
int emu_mr_read(struct emu_mr *mr, void *dst, uint64_t addr, size_t len);
int emu_mr_write(struct emu_mr *mr, uint64_t addr, const void *src, size_t len);
/* Is the address space c was bound to at HELLO still there: not gone
 * with an exit or an exec? (a read of its /proc/<pid>/mem descriptor,
 * which returns nothing once that address space is gone). Contexts
 * without one (in-process tests): yes. */
bool emu_mem_alive(const struct emu_ctx *c);

/* Memory channel (pin.c): the client's io_uring, through whose buffer
 * table the pages of its registrations are pinned. Attach takes it from
 * the process bound at HELLO, restricts and enables it, and tries it on
 * the probe page: 0 or -EINVAL (every refusal the same), -EBUSY, -ENOMEM. */
struct emu_pin;
int emu_pin_attach(struct emu_ctx *c, const struct uroce_mem_chan_req *q);
void emu_pin_detach(struct emu_ctx *c);
/* may a registration of len bytes use buffers slot.. of c's channel? */
bool emu_pin_slots_ok(const struct emu_ctx *c, uint32_t slot, uint64_t len);
/* One piece: local bytes against client address addr in buffer slot; at
 * most EMU_PIN_PIECE bytes. write: into the client. 0 or -EFAULT. */
#define EMU_PIN_PIECE (32u << 10)
struct emu_pin_io { uint8_t *local; uint64_t addr; uint32_t len; uint32_t slot; };
int emu_pin_xfer(struct emu_ctx *c, const struct emu_pin_io *io, unsigned n, bool write);

/* uroce-ctl mrs: the registrations viewer may see (its uid's; every one
 * for root and the daemon's uid), from q's place on */
void emu_mr_info_fill(struct emu_dev *d, const struct emu_ctx *viewer,
		      const struct uroce_query_mrs_req *q, struct uroce_query_mrs_rep *r);

/* Daemon-mapped MRs (mrmap.c, docs/security.md): map a piece of an MR
 * from the file descriptor the client sent after checking it against the
 * client's own mapping (through the maps descriptor bound at HELLO); 0,
 * or -EACCES for every refusal (the MR keeps the route it has).
 * emu_mr_unmap drops every piece of mr. */
int emu_mr_map(struct emu_ctx *c, const struct uroce_map_mr_req *q, int fd);
void emu_mr_unmap(struct emu_mr *mr);
/* mr over device memory: its one piece is the DM's own mapping */
int emu_mr_map_dm(struct emu_mr *mr, uint8_t *base);
/* the daemon address of client [addr, addr + len) of mr if one of its
 * mapped pieces holds it (and may be written, if write), else NULL */
uint8_t *emu_mrmap_at(const struct emu_mr *mr, uint64_t addr, uint64_t len, bool write);
/* Write back what the daemon's mappings of mr hold of client [addr, addr +
 * len) to the files behind them (msync MS_SYNC): a persistent FLUSH.
 * Memory it does not map has no file of its own to write back. 0 or -errno. */
int emu_mrmap_persist(const struct emu_mr *mr, uint64_t addr, uint64_t len);
/* Zero-copy TX (docs/performance.md): the daemon address of client
 * [addr, addr + len) of mr if one mapped piece of a file (not device
 * memory) holds it, and *h the mapping it lies in; else NULL. A frame that
 * points into it takes a reference (emu_mrmap_get) and drops it when the
 * port has let go of it (emu_mrmap_put, from any thread): the mapping is
 * unmapped at the last put, so a deregistration or a client's exit waits
 * for the frames in flight without blocking anything. */
const uint8_t *emu_mrmap_find_held(const struct emu_mr *mr, uint64_t addr, uint64_t len,
				   struct emu_mrmap_hold **h);
void emu_mrmap_get(struct emu_mrmap_hold *h);
void emu_mrmap_put(struct emu_mrmap_hold *h);
/* memcpy that turns a SIGBUS (a client shrank a mapped file, or a page of
 * it is gone: the daemon never faults one in) into -EFAULT */
int emu_mrmap_copy(void *dst, const void *src, size_t n);
/* Stall guard (mem.c, docs/security.md): an engine thread publishes each
 * access to application memory in its guard, which it attaches to the
 * device it serves (d->guard): token != 0 while a system call is under
 * way, ctx whose memory it is. A watchdog that sees the same token for
 * too long claims it (emu_mem_guard_abandon); the thread then exits the
 * moment its call returns, touching nothing, and a fresh engine thread
 * takes the device over (emu_xport_quarantine for ctx). */
#define EMU_MEM_ABANDONED UINT64_MAX
struct emu_mem_guard {
	uint64_t token;               /* atomic; 0 = not in an access */
	struct emu_ctx *ctx;          /* atomic */
	pid_t tid;                    /* the engine thread */
	uint64_t seq;                 /* its last token (only it writes this) */
	struct emu_mem_guard *next;   /* abandoned guards (never freed) */
};
/* The engine thread of d publishes its accesses in g from now on (NULL:
 * none, tests). */
void emu_mem_guard_set(struct emu_dev *d, struct emu_mem_guard *g);
/* Watchdog: claim g's access token; true if the thread is now abandoned. */
bool emu_mem_guard_abandon(struct emu_mem_guard *g, uint64_t token);

/* Batched writes across packets (mem.c): while d's RX burst is open
 * (struct emu_burst, d->burst, wb.on), emu_mem_write_deferred only records
 * the write; src must stay valid until the burst ends. emu_mem_flush
 * writes the record out: every other memory access does it first, and so
 * must anything that makes the data visible (a CQE). A failed deferred
 * write calls d->xops->mem_fault(qp, tag), tag being the caller's word
 * for what the write was. Outside a burst the write is immediate (0 or
 * -errno). */
void emu_mem_batch(struct emu_dev *d, bool on);
void emu_mem_flush(struct emu_dev *d);
/* has qp a deferred write not written yet? (no system call) */
bool emu_mem_pending(const struct emu_qp *qp);
int emu_mem_write_deferred(struct emu_qp *qp, struct emu_ctx *c, const struct emu_rvec *r,
			   unsigned nr, const void *src, uint32_t len, uint64_t tag);

#endif /* EMU_MEM_H */
