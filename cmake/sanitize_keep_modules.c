/* Linked into tests and samples of HPLVK_SANITIZE builds only.
 *
 * The Vulkan loader dlclose()s the driver (Lavapipe) and the layers when the
 * instance is destroyed. A leak inside one of them is then reported by
 * LeakSanitizer at exit with an "<unknown module>" stack, which no
 * suppression in tests/lsan.supp can match. Making dlclose() a no-op in the
 * test process keeps those modules mapped, so their stacks symbolize and the
 * driver-stack suppressions apply; leaks in hplvk itself are reported as
 * before. (The Vulkan loader has a build option for the same purpose,
 * LOADER_DISABLE_DYNAMIC_LIBRARY_UNLOADING, which Debian's does not use.) */
int dlclose(void *handle);

int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
