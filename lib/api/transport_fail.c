/* hpl_transport_fail: the last-error message of a transport library's own
 * failures (lib/mpi sits above the public API and reaches hpl_last_error()
 * only through this). */
#include "common.h"

#include "hplvk_transport.h"

int hpl_transport_fail(int code, const char *message)
{
    return hpl__fail(code, "%s", message ? message : "");
}
