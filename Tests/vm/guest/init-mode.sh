# Init mode (Tests/vm/README.md): started by /sbin/hg-init as PID 1's child, no systemd. Brings up
# what the BLE scenarios share (kernel modules, the system D-Bus), runs the plan, reports.
. /share/guest/lib.sh
mark_started init
hostname healthgate-vm
mount -t tmpfs tmpfs /var/tmp
modprobe -a bluetooth hci_vhci 2>> "$RESULTS/init.log"
mkdir -p /run/dbus
dbus-daemon --system --fork --nopidfile 2>> "$RESULTS/init.log"
run_plan
report $?
