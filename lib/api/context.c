/* Contexts: the Vulkan instance, validation, physical devices, teardown. */
#include "api.h"

#include "access.h"
#include "acquired.h"
#include "bounds.h"
#include "config.h"
#include "device.h"
#include "inflight.h"
#include "progress.h"
#include "residency.h"
#include "submit.h"
#include "submitter.h"
#include "transfer.h"
#include "vk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                    VkDebugUtilsMessageTypeFlagsEXT type,
                                                    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)type;
    hpl_context *ctx = user;
    /* The 1.3.239 layer's timeline tracking times out when several threads
     * wait on one timeline; the message itself calls it a validation bug
     * (KhronosGroup/Vulkan-ValidationLayers#4968, fixed upstream by #8519).
     * Only this message ID is demoted, to DEBUG. */
    if (data->messageIdNumber == 0x57e65a33 && data->pMessageIdName &&
        !strcmp(data->pMessageIdName, "UNASSIGNED-VkSemaphore-state-timeout")) {
        hpl__log(&ctx->logger, HPL_LOG_DEBUG, "validation (known layer bug, ignored): %s", data->pMessage);
        return VK_FALSE;
    }
    hpl_log_level level = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT     ? HPL_LOG_ERROR
                          : severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT ? HPL_LOG_ERROR
                                                                                        : HPL_LOG_INFO;
    hpl__log(&ctx->logger, level, "validation: %s", data->pMessage);
    return VK_FALSE;
}

static bool layer_present(const char *name)
{
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    VkLayerProperties *layers = hpl__calloc(n, sizeof *layers);
    if (!layers)
        return false;
    vkEnumerateInstanceLayerProperties(&n, layers);
    bool found = false;
    for (uint32_t i = 0; i < n && !found; i++)
        found = !strcmp(layers[i].layerName, name);
    hpl__free(layers);
    return found;
}

static int create_instance(hpl_context *ctx, bool validation)
{
    static const char *layer = "VK_LAYER_KHRONOS_validation";
    if (validation && !layer_present(layer))
        return hpl__fail(HPL_ERROR_UNSUPPORTED, "validation requested but %s is not installed "
                                                "(Debian: vulkan-validationlayers)", layer);
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                        .enabledValidationFeatureCount = 1,
                                        .pEnabledValidationFeatures = enables};
    VkDebugUtilsMessengerCreateInfoEXT messenger = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .pNext = &features,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_validation,
        .pUserData = ctx};
    const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "hplvk",
                             .pEngineName = "hplvk",
                             .engineVersion = HPLVK_VERSION,
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pNext = validation ? &messenger : NULL,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = validation ? 1 : 0,
                               .ppEnabledLayerNames = &layer,
                               .enabledExtensionCount = validation ? 1 : 0,
                               .ppEnabledExtensionNames = extensions};
    VkResult r = vkCreateInstance(&ci, NULL, &ctx->instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
        return hpl__fail(HPL_ERROR_NO_DEVICE, "no Vulkan 1.2 driver found (is mesa-vulkan-drivers installed?)");
    if (r != VK_SUCCESS)
        return hpl__vk_error(r, "vkCreateInstance");
    if (validation) {
        PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            ctx->instance, "vkCreateDebugUtilsMessengerEXT");
        messenger.pNext = NULL;
        if (create && create(ctx->instance, &messenger, NULL, &ctx->messenger) != VK_SUCCESS)
            ctx->messenger = VK_NULL_HANDLE;
    }
    return HPL_OK;
}

static int enumerate_physical(hpl_context *ctx)
{
    uint32_t n = 0;
    VkResult r = vkEnumeratePhysicalDevices(ctx->instance, &n, NULL);
    if (r != VK_SUCCESS)
        return hpl__vk_error(r, "vkEnumeratePhysicalDevices");
    if (n == 0)
        return hpl__fail(HPL_ERROR_NO_DEVICE, "no Vulkan device found (is a driver such as mesa-vulkan-drivers installed?)");
    ctx->physical = hpl__calloc(n, sizeof *ctx->physical);
    ctx->physical_info = hpl__calloc(n, sizeof *ctx->physical_info);
    if (!ctx->physical || !ctx->physical_info)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "hpl_context_create: out of host memory");
    vkEnumeratePhysicalDevices(ctx->instance, &n, ctx->physical);
    ctx->physical_count = (int)n;
    for (uint32_t i = 0; i < n; i++)
        hpl__physical_info(ctx->physical[i], i, &ctx->physical_info[i]);
    return HPL_OK;
}

/* The Vulkan instance: hplvk's own, or the application's (interop.c says
 * what else changes then). */
static int open_instance(hpl_context *ctx, const hpl_context_desc *desc)
{
    const hpl_vulkan_desc *vk = desc->vulkan;
    if (!vk)
        return create_instance(ctx, ctx->validation);
    if (desc->devices)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "devices (\"%s\") and vulkan are both given: the devices of a "
                                                     "context on the application's Vulkan objects are vulkan->devices",
                         desc->devices);
    if (!vk->instance)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "vulkan->instance is VK_NULL_HANDLE");
    ctx->instance = vk->instance;
    ctx->borrowed_instance = true;
    return HPL_OK;
}

/* With no device list given, a rank over a transport opens GPU number
 * node_rank when its machine has a GPU for each of its ranks there. */
static const char *default_spec(const hpl_context *ctx, const hpl_transport *over, char *buf, size_t size)
{
    if (!over || over->node_ranks < 2)
        return NULL;
    int gpus = 0;
    for (int i = 0; i < ctx->physical_count; i++)
        gpus += (ctx->physical_info[i].type & HPL_DEVICE_GPU) != 0;
    if (gpus < over->node_ranks)
        return NULL;
    snprintf(buf, size, "gpu%d", over->node_rank);
    return buf;
}

int hpl__context_make(const hpl_context_desc *desc, const hpl_transport *over, hpl_context **out)
{
    static const hpl_context_desc defaults = {0};
    if (!desc)
        desc = &defaults;
    hpl_context *ctx = hpl__calloc(1, sizeof *ctx);
    if (!ctx)
        return hpl__fail(HPL_ERROR_OUT_OF_HOST_MEMORY, "hpl_context_create: out of host memory");
    pthread_mutex_init(&ctx->lock, NULL);
    pthread_mutex_init(&ctx->semaphore_lock, NULL);
    ctx->logger = (hpl__logger){desc->log, desc->log_user};
    /* Every handle carries its context's serial: a handle of another
     * context, alive or destroyed, is never taken for one of this one. */
    uint32_t serial = hpl__handle_serial_next();
    hpl__pool_init(&ctx->arrays, serial);
    hpl__pool_init(&ctx->kernels, serial);
    const char *spec = desc->devices ? desc->devices : getenv("HPLVK_DEVICES");
    int rc = serial ? HPL_OK
                    : hpl__fail(HPL_ERROR_UNSUPPORTED, "this process has created %u contexts, the most whose handles "
                                                       "can be told apart",
                                HPL__HANDLE_SERIAL_MAX);
    if (rc == HPL_OK)
        rc = hpl__cache_init(&ctx->cache, desc->cache_dir, desc->no_disk_cache, &ctx->logger);
    bool validation = false;
    if (rc == HPL_OK)
        rc = hpl__parse_switch("HPLVK_VALIDATION", getenv("HPLVK_VALIDATION"), false, "no validation layer",
                               "the validation layer", &validation);
    ctx->validation = desc->validation || validation;
    if (rc == HPL_OK)
        rc = open_instance(ctx, desc);
    if (rc == HPL_OK)
        rc = enumerate_physical(ctx);
    char spec_buf[32];
    if (rc == HPL_OK && !spec)
        spec = default_spec(ctx, over, spec_buf, sizeof spec_buf);
    if (rc == HPL_OK)
        rc = desc->vulkan ? hpl__devices_adopt(ctx, desc->vulkan) : hpl__devices_open(ctx, spec);
    if (rc == HPL_OK)
        rc = hpl__inflight_configure(ctx, desc->max_in_flight);
    if (rc == HPL_OK)
        rc = hpl__staging_configure(ctx);
    if (rc == HPL_OK)
        rc = hpl__devices_configure(ctx, desc);
    if (rc == HPL_OK)
        rc = hpl__bounds_configure(ctx, desc->bounds_check);
    if (rc == HPL_OK)
        rc = hpl__exchange_configure(ctx);
    if (rc == HPL_OK)
        rc = hpl__push_configure(ctx);
    for (int i = 0; rc == HPL_OK && ctx->validation && i < ctx->device_count; i++)
        ctx->devices[i].semaphore_lock = &ctx->semaphore_lock;
    if (rc == HPL_OK)
        rc = hpl__submitters_start(ctx);
    if (rc == HPL_OK)
        rc = hpl__progress_start(ctx);
    if (rc == HPL_OK && !over) /* over ranks: once they joined (span.c) */
        hpl__trace_from_env(ctx);
    if (rc != HPL_OK) {
        hpl__error_prefix("hpl_context_create");
        hpl_context_destroy(ctx);
        return rc;
    }
    *out = ctx;
    return HPL_OK;
}

int hpl_context_create(const hpl_context_desc *desc, hpl_context **out)
{
    if (!out)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_context_create: out is NULL");
    return hpl__context_make(desc, NULL, out);
}

int hpl_finish(hpl_context *ctx)
{
    if (!ctx)
        return hpl__fail(HPL_ERROR_INVALID_ARGUMENT, "hpl_finish: ctx is NULL");
    HPL__LOCK(ctx);
    int rc = hpl__wait_idle(ctx);
    if (rc == HPL_OK)
        rc = hpl__bounds_poll(ctx);
    hpl__inflight_trim(ctx);
    int deferred = hpl__context_take_error(ctx);
    if (rc == HPL_OK && deferred != HPL_OK)
        rc = hpl__fail(deferred, "hpl_finish: earlier asynchronous work failed: %s", hpl_error_string(deferred));
    HPL__UNLOCK(ctx);
    return rc;
}

void hpl_context_destroy(hpl_context *ctx)
{
    if (!ctx)
        return;
    HPL__LOCK(ctx);
    hpl__acquired_warn_left(ctx);
    if (ctx->device_count)
        hpl__wait_idle(ctx);
    hpl__trace_at_destroy(ctx);
    hpl__progress_stop(ctx);
    hpl__plans_destroy_all(ctx);
    hpl__kernel_destroy_all(ctx);
    hpl__array_destroy_all(ctx);
    hpl__devices_close(ctx);
    if (ctx->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            ctx->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy)
            destroy(ctx->instance, ctx->messenger, NULL);
    }
    if (ctx->instance && !ctx->borrowed_instance)
        vkDestroyInstance(ctx->instance, NULL);
    hpl__free(ctx->physical);
    hpl__free(ctx->physical_info);
    hpl__free(ctx->subkernels);
    hpl__cache_destroy(&ctx->cache);
    if (ctx->span)
        ctx->span->free(ctx);
    HPL__UNLOCK(ctx);
    pthread_mutex_destroy(&ctx->lock);
    pthread_mutex_destroy(&ctx->semaphore_lock);
    hpl__free(ctx);
}
