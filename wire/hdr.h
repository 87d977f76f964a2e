/* SPDX-License-Identifier: MIT */
/**
 * @file hdr.h
 * @brief Base Transport Header and extension headers: sizes, decoded
 *        structs, and byte-exact encode/decode.
 *
 * Decoded structs hold host-order values. Reserved bits are kept (as `resv*`
 * fields) so that decode followed by encode reproduces the bytes exactly;
 * senders should leave them 0.
 */
#ifndef WIRE_HDR_H
#define WIRE_HDR_H

#include <stdbool.h>
#include <stdint.h>

/** @name Header lengths in bytes */
/**@{*/
#define WIRE_ETH_LEN        14  /**< Ethernet II header */
#define WIRE_VLAN_LEN        4  /**< one 802.1Q tag */
#define WIRE_IPV4_LEN       20  /**< IPv4 header without options */
#define WIRE_IPV6_LEN       40  /**< IPv6 fixed header */
#define WIRE_UDP_LEN         8
#define WIRE_BTH_LEN        12
#define WIRE_RETH_LEN       16
#define WIRE_AETH_LEN        4
#define WIRE_ATOMICETH_LEN  28
#define WIRE_ATOMICACKETH_LEN 8
#define WIRE_DETH_LEN        8
#define WIRE_IMMDT_LEN       4
#define WIRE_IETH_LEN        4
#define WIRE_XRCETH_LEN      4  /**< reserved 8 bits, XRC SRQ number 24 */
#define WIRE_CNP_RESV_LEN   16  /**< reserved zero bytes after a CNP's BTH */
#define WIRE_ICRC_LEN        4
/**@}*/

#define WIRE_ETHERTYPE_IPV4 0x0800
#define WIRE_ETHERTYPE_IPV6 0x86dd
#define WIRE_ETHERTYPE_VLAN 0x8100
#define WIRE_ETHERTYPE_ARP  0x0806
#define WIRE_IPPROTO_UDP    17
#define WIRE_ROCE_UDP_PORT  4791  /**< RoCEv2 destination port (IANA) */
#define WIRE_UDP_SPORT_MIN  0xc000 /**< RoCEv2 source ports: 0xC000..0xFFFF */
#define WIRE_BTH_TVER       0     /**< the only defined transport version */
#define WIRE_PKEY_DEFAULT   0xffff /**< default full-member P_Key */
#define WIRE_QPN_MASK       0x00ffffffu
#define WIRE_PKEY_FULL      0x8000 /**< membership bit of a P_Key: full member */

/** Whether a packet's P_Key @p pkt matches the table entry @p mine (IBTA
 *  10.9, partitioning): the same 15-bit key, not the invalid key 0, and
 *  at least one of the two a full member (two limited members may not
 *  talk). */
static inline bool wire_pkey_match(uint16_t pkt, uint16_t mine)
{
	return (pkt & 0x7fff) && (pkt & 0x7fff) == (mine & 0x7fff) &&
	       ((pkt | mine) & WIRE_PKEY_FULL);
}

/** @name ECN codepoints (low two bits of IPv4 TOS / IPv6 traffic class) */
/**@{*/
#define WIRE_ECN_MASK   0x03
#define WIRE_ECN_NOT_ECT 0x00
#define WIRE_ECN_ECT1   0x01
#define WIRE_ECN_ECT0   0x02
#define WIRE_ECN_CE     0x03
/**@}*/

/** Base Transport Header (12 bytes).
 *
 *  byte 0: opcode; byte 1: SE | M | PadCnt(2) | TVer(4); bytes 2-3: P_Key;
 *  byte 4: FECN | BECN | resv6; bytes 5-7: DestQP;
 *  byte 8: AckReq | resv7; bytes 9-11: PSN. */
struct wire_bth {
	uint8_t  opcode;
	bool     se;     /**< solicited event */
	bool     mig;    /**< MigReq (the "M" bit) */
	uint8_t  pad;    /**< pad count 0..3 */
	uint8_t  tver;   /**< transport header version, must be 0 */
	uint16_t pkey;
	bool     fecn;
	bool     becn;
	uint8_t  resv6;  /**< 6 reserved bits of byte 4 (ICRC-masked) */
	uint32_t dqpn;   /**< destination QP, 24 bits */
	bool     ackreq;
	uint8_t  resv7;  /**< 7 reserved bits of byte 8 */
	uint32_t psn;    /**< 24 bits */
};

/** RDMA Extended Transport Header (WRITE first/only, READ request). */
struct wire_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;
};

/** ACK Extended Transport Header. See aeth.h for the syndrome. */
struct wire_aeth {
	uint8_t  syndrome;
	uint32_t msn;    /**< 24 bits */
};

/** Atomic Extended Transport Header (CmpSwap / FetchAdd requests). */
struct wire_atomiceth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add; /**< swap value (CmpSwap) or addend (FetchAdd) */
	uint64_t compare;  /**< compare value (CmpSwap only; 0 for FetchAdd) */
};

/** Atomic Acknowledge Extended Transport Header. */
struct wire_atomicacketh {
	uint64_t orig;     /**< original remote data */
};

/** Datagram Extended Transport Header (UD). */
struct wire_deth {
	uint32_t qkey;
	uint8_t  resv8;    /**< reserved byte before the source QPN */
	uint32_t sqpn;     /**< source QP, 24 bits */
};

/** Decode 12 bytes at @p p. */
void wire_bth_decode(const uint8_t *p, struct wire_bth *b);
/** Encode into 12 bytes at @p p (pad is written as given). */
void wire_bth_encode(uint8_t *p, const struct wire_bth *b);
/** Decode/encode a RETH (16 bytes). */
void wire_reth_decode(const uint8_t *p, struct wire_reth *r);
void wire_reth_encode(uint8_t *p, const struct wire_reth *r);
/** Decode/encode an AETH (4 bytes). */
void wire_aeth_decode(const uint8_t *p, struct wire_aeth *a);
void wire_aeth_encode(uint8_t *p, const struct wire_aeth *a);
/** Decode/encode an AtomicETH (28 bytes). */
void wire_atomiceth_decode(const uint8_t *p, struct wire_atomiceth *a);
void wire_atomiceth_encode(uint8_t *p, const struct wire_atomiceth *a);
/** Decode/encode an AtomicAckETH (8 bytes). */
void wire_atomicacketh_decode(const uint8_t *p, struct wire_atomicacketh *a);
void wire_atomicacketh_encode(uint8_t *p, const struct wire_atomicacketh *a);
/** Decode/encode a DETH (8 bytes). */
void wire_deth_decode(const uint8_t *p, struct wire_deth *d);
void wire_deth_encode(uint8_t *p, const struct wire_deth *d);

/** Pad count for a payload of @p len bytes: bytes needed to reach a multiple of 4. */
static inline uint8_t wire_pad(uint32_t len)
{
	return (uint8_t)((0u - len) & 3u);
}

#endif /* WIRE_HDR_H */
