/* SPDX-License-Identifier: MIT */
/* Ids the daemon echoes in event records (user_handle), mapped back to
 * objects. An id is never reused, so a record that arrives after its object
 * was destroyed finds nothing instead of freed memory. */
#include <pthread.h>

#include "urv_obj.h"

#define URV_REG_BUCKETS 1024

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct urv_obj *buckets[URV_REG_BUCKETS];
static uint64_t next_id = 1;

void urv_registry_lock(void) { pthread_mutex_lock(&reg_lock); }
void urv_registry_unlock(void) { pthread_mutex_unlock(&reg_lock); }

void urv_obj_add(struct urv_obj *o, enum urv_obj_type type)
{
	pthread_mutex_lock(&reg_lock);
	o->id = next_id++;
	o->type = type;
	o->events_got = 0;
	o->next = buckets[o->id % URV_REG_BUCKETS];
	buckets[o->id % URV_REG_BUCKETS] = o;
	pthread_mutex_unlock(&reg_lock);
}

void urv_obj_del(struct urv_obj *o)
{
	struct urv_obj **pp;

	pthread_mutex_lock(&reg_lock);
	for (pp = &buckets[o->id % URV_REG_BUCKETS]; *pp; pp = &(*pp)->next) {
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
}

/* Caller holds the registry lock. */
struct urv_obj *urv_obj_lookup(uint64_t id, enum urv_obj_type type)
{
	struct urv_obj *o;

	for (o = buckets[id % URV_REG_BUCKETS]; o; o = o->next)
		if (o->id == id)
			return o->type == type ? o : NULL;
	return NULL;
}
