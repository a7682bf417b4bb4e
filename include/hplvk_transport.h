/* hplvk_transport.h: how a context spans several processes (ranks).
 *
 * A context made over a transport spans ranks: every rank runs the same
 * program, opens only its own devices, and sees every rank's devices, in
 * rank order (chapter 10 of hplvk.h says what each call means across ranks).
 * The library moves what a rank's devices need from another rank through
 * the transport, between the two ranks' host storage.
 *
 * The one transport shipped is MPI's (<hplvk_mpi.h>, library hplvk_mpi,
 * which makes the transport and the context in one call). This header is
 * what that library and hplvk agree on; an application never needs it
 * unless it brings a transport of its own.
 *
 * Threading: hplvk calls a transport's functions from one thread at a time
 * per context, with the context's lock held, in the same order on every
 * rank (every function below is collective or pairs a send with a receive
 * posted in the same position of the same list on the peer).
 */
#ifndef HPLVK_TRANSPORT_H
#define HPLVK_TRANSPORT_H

#include "hplvk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One message of an exchange: a box of an array, sent from or received
 * into the host storage of the array on this rank. The box is lo .. lo +
 * extent - 1 of an array of `whole` elements per dimension (row-major, the
 * last dimension contiguous; unused dimensions 1 and 0 in lo), elements of
 * elem_size bytes, the first at base. A transport moves exactly the box's
 * elements, never the bytes between its rows. */
typedef struct hpl_transport_message {
    int peer;  /* the other rank */
    bool send; /* true: base's box goes to peer; false: peer's box arrives into base */
    void *base;
    size_t elem_size;
    int ndims; /* 1 to 3 */
    uint64_t whole[3];
    uint64_t lo[3];
    uint64_t extent[3]; /* each >= 1 */
} hpl_transport_message;

typedef struct hpl_transport {
    int rank;  /* this process, 0 .. ranks - 1 */
    int ranks; /* >= 1 */
    /* This process among the ranks on its own machine (0 .. node_ranks - 1;
     * 0 and 1 when unknown): with no device list given, a rank opens GPU
     * number node_rank when the machine has at least node_ranks GPUs. */
    int node_rank, node_ranks;
    void *user;
    /* Posts every message of the list and returns once all completed: a
     * sent box may then be overwritten, a received one read. Every rank
     * calls it at the same point; a message to rank p is matched with the
     * message from this rank in p's list in the order both lists give
     * them. Returns HPL_OK, or an error code after writing a message that
     * says what failed into error[0 .. error_size - 1]. */
    int (*exchange)(void *user, const hpl_transport_message *messages, size_t count, char *error,
                    size_t error_size);
    /* Collective: all[r * bytes .. (r + 1) * bytes - 1] = rank r's `mine`,
     * for every rank r. Same return as exchange. */
    int (*allgather)(void *user, const void *mine, size_t bytes, void *all, char *error, size_t error_size);
    /* Called once, by hpl_context_destroy, after the context's last use
     * of the transport (or by hpl_context_create_over when it fails). */
    void (*destroy)(void *user);
    /* Optional, both or neither (NULL: hplvk calls exchange alone): the two
     * halves of exchange, so that hplvk readies what a later list sends
     * (downloads it from a device) while an earlier list moves. post posts
     * every message of the list and returns without waiting, *pending set
     * to what wait takes (NULL when nothing is in flight); the caller keeps
     * the boxes' memory untouched (sent ones unchanged, received ones
     * unread) until wait returns, and may free the list itself at once.
     * wait returns once all of post's messages completed, and always
     * releases pending (also on error; NULL: nothing to wait for). hplvk
     * posts one or more lists, then waits for each of them, in order,
     * before it uses the transport again (every rank that posted waits).
     * Matching: a message to rank p is matched with the message from this
     * rank in p's lists in the order both ranks posted them (the lists of
     * one exchange concatenated, as if they were one exchange); neither
     * call is collective, and a rank with nothing to move calls neither.
     * On failure post leaves nothing of the list in flight (*pending NULL).
     * Same return as exchange. */
    int (*post)(void *user, const hpl_transport_message *messages, size_t count, void **pending, char *error,
                size_t error_size);
    int (*wait)(void *user, void *pending, char *error, size_t error_size);
} hpl_transport;

/* Creates a context spanning the transport's ranks (collective: every rank
 * calls it with the same description but its own device list). Each rank
 * opens its own devices as hpl_context_create does (desc->devices, else its
 * own HPLVK_DEVICES, else the default); then the ranks learn each other's
 * devices. Besides hpl_context_create's errors: HPL_ERROR_INVALID_ARGUMENT
 * for a malformed transport (the message names the field), and the
 * transport's own errors. On failure *out is untouched and the transport
 * was destroyed. Vulkan interop (desc->vulkan) is not supported across
 * ranks (HPL_ERROR_UNSUPPORTED). */
HPL_API int hpl_context_create_over(const hpl_context_desc *desc, const hpl_transport *transport,
                                    hpl_context **out);

/* For a transport library's own functions (hpl_mpi_context_create's checks
 * before it reaches hpl_context_create_over): records message as this
 * thread's hpl_last_error() and returns code, as the library's own failing
 * calls do. */
HPL_API int hpl_transport_fail(int code, const char *message);

#ifdef __cplusplus
}
#endif

#endif
