/* Element types: size and GLSL name, from one list. */
#include "common.h"

#define HPL__TYPE_LIST(X)          \
    X(HPL_FLOAT32, 4, "float")     \
    X(HPL_FLOAT64, 8, "double")    \
    X(HPL_INT32, 4, "int")         \
    X(HPL_UINT32, 4, "uint")       \
    X(HPL_INT64, 8, "int64_t")     \
    X(HPL_UINT64, 8, "uint64_t")

size_t hpl_type_size(hpl_type type)
{
    switch (type) {
#define HPL__TYPE_SIZE(t, size, name) \
    case t:                           \
        return size;
        HPL__TYPE_LIST(HPL__TYPE_SIZE)
#undef HPL__TYPE_SIZE
    default:
        return 0;
    }
}

const char *hpl_type_name(hpl_type type)
{
    switch (type) {
#define HPL__TYPE_NAME(t, size, name) \
    case t:                           \
        return name;
        HPL__TYPE_LIST(HPL__TYPE_NAME)
#undef HPL__TYPE_NAME
    default:
        return "invalid";
    }
}
