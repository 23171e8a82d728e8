import Foundation
import LinuxAdapters
import MassStorageDriver
public import WatchMTP

/// The watches attached now, both ways: the MTP devices libmtp finds, and the volumes under the
/// mount roots that hold a `GARMIN` folder.
public enum WatchDiscovery {
    /// The MTP devices attached now (libmtp's table and its probe), or why they cannot be listed.
    public static func mtpDevices() async -> Result<[MTPRawDevice], MTPError> {
        do { return .success(try await MTP.run { () throws(MTPError) in try MTP.detect() }) } catch let error as MTPError {
            return .failure(error)
        } catch {
            return .failure(MTPError("\(error)"))
        }
    }

    /// The watches mounted under `roots` (from `mountInfo`).
    public static func mounted(roots: [String] = ["/media", "/run/media"], mountInfo: String = "/proc/self/mountinfo") async -> [MountedWatchConnection] {
        guard let text = try? ProcFile.read(mountInfo) else { return [] }
        var found: [MountedWatchConnection] = []
        for mount in MountInfo.mounts(MountInfo.parse(text).mounts, under: roots) {
            if let watch = await MountedWatchConnection.at(mount.mountPoint) { found.append(watch) }
        }
        return found
    }
}
