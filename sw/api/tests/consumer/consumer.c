/* A user of the installed libvelo (C). Without a device it must get the documented error. */
#include <errno.h>
#include <stdio.h>
#include <velo/velo.h>

int main(void) {
    velo_open_attr_t a;
    velo_ep_t* ep = NULL;
    velo_open_attr_init(&a);
    a.device = "no-such-device";
    int r = velo_open(&a, &ep);
    if (r != -EINVAL || ep) {
        printf("consumer: velo_open gave %d\n", r);
        return 1;
    }
    printf("consumer (C): %s\n", velo_strerror(r));
    return 0;
}
