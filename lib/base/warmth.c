/* The clock estimate of warmth.h. */
#include "warmth.h"

#include <math.h>

void hpl__warmth_warmed(hpl__warmth *w)
{
    w->duty = 1.0;
}

void hpl__warmth_ran(hpl__warmth *w, double busy_s, double wall_s)
{
    if (!(wall_s > 0.0) || !isfinite(wall_s))
        return;
    busy_s = isfinite(busy_s) ? fmin(fmax(busy_s, 0.0), wall_s) : 0.0;
    if (hpl__warmth_cold(w)) {
        if (busy_s < HPL__WARM_RAMP_S)
            return;
        /* Its clocks rose during its work, which comes first (a run's
         * pieces start at once); what follows is idle time. */
        hpl__warmth_warmed(w);
        wall_s -= busy_s;
        busy_s = 0.0;
        if (!(wall_s > 0.0))
            return;
    }
    double keep = exp(-wall_s / HPL__WARM_TAU_S);
    w->duty = w->duty * keep + busy_s / wall_s * (1.0 - keep);
}

bool hpl__warmth_cold(const hpl__warmth *w)
{
    return !(w->duty >= HPL__WARM_DUTY);
}
