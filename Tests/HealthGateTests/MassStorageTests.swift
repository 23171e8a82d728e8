import DriverKit
import Foundation
import Testing
@testable import HealthGate

@Suite struct MountInfoTests {
    let sample = """
        22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
        36 22 0:30 / /run rw,nosuid,nodev shared:12 - tmpfs tmpfs rw,size=1625640k
        412 36 8:17 / /run/media/ann/GARMIN\\040FR945 rw,nosuid,nodev,relatime shared:230 - vfat /dev/sdb1 rw,fmask=0022
        418 22 8:33 / /media/usb0 ro,nosuid,nodev,relatime shared:240 - vfat /dev/sdc1 ro
        500 22 8:49 / /mediax rw shared:1 - ext4 /dev/sdd1 rw
        garbage line
        501 x 8:1 / /mnt rw - ext4 /dev/sde1 rw
        """

    @Test func parsesMountsAndReportsBadLines() {
        let (mounts, errors) = MountInfo.parse(sample)
        #expect(mounts.map(\.mountPoint) == ["/", "/run", "/run/media/ann/GARMIN FR945", "/media/usb0", "/mediax"])
        #expect(mounts[2] == Mount(id: 412, mountPoint: "/run/media/ann/GARMIN FR945", fileSystem: "vfat", source: "/dev/sdb1", readOnly: false))
        #expect(mounts[3].readOnly)
        #expect(errors == [MountInfoError(line: 6, reason: "expected at least 6 fields, '-', then 3 more"),
                           MountInfoError(line: 7, reason: "mount and parent IDs must be numbers")])
        let under = MountInfo.mounts(mounts, under: ["/media", "/run/media/"])
        #expect(under.map(\.mountPoint) == ["/run/media/ann/GARMIN FR945", "/media/usb0"])
    }

    @Test func unescapesOctal() {
        #expect(MountInfo.unescape("a\\040b\\011c\\012d\\134e") == "a b\tc\nd\\e")
        #expect(MountInfo.unescape("trailing\\04") == "trailing\\04")
        #expect(MountInfo.unescape("\\999") == "\\999")
    }

    /// A folder laid out like a Garmin watch: the FIT files of its data folders, any case.
    @Test func findsAWatchsFitFiles() throws {
        let root = try temporaryFolder("volume")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fm = FileManager.default
        for folder in ["GARMIN/ACTIVITY", "GARMIN/Monitor", "GARMIN/Sleep", "GARMIN/Apps", "Music"] {
            try fm.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
        for file in ["GARMIN/ACTIVITY/A1.FIT", "GARMIN/Monitor/m1.fit", "GARMIN/Sleep/s1.fit", "GARMIN/Apps/app.prg",
                     "GARMIN/Apps/x.fit", "Music/song.fit", "GARMIN/ACTIVITY/._A1.FIT"] {
            fm.createFile(atPath: root + "/" + file, contents: Data())
        }
        #expect(WatchVolume.fitFiles(at: root) == [root + "/GARMIN/ACTIVITY/A1.FIT", root + "/GARMIN/Monitor/m1.fit",
                                                    root + "/GARMIN/Sleep/s1.fit"])
        #expect(WatchVolume.fitFiles(at: root + "/Music").isEmpty)
    }

    @Test func settingsNameTheirKey() {
        #expect(throws: ConfigError(keyPath: "drivers.w.roots", reason: "must be a list of absolute folders")) {
            try MassStorage.settings(DriverConfig(["roots": "media"]), keyPath: "drivers.w")
        }
        #expect(throws: ConfigError(keyPath: "drivers.w.root", reason: "unknown key")) {
            try MassStorage.settings(DriverConfig(["root": "/media"]), keyPath: "drivers.w")
        }
    }
}
