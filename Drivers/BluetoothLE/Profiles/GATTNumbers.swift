/// 16-bit UUIDs (Bluetooth SIG Assigned Numbers) of the services and characteristics this module
/// decodes, plus display names. Every 16-bit UUID stands for `0000xxxx-0000-1000-8000-00805F9B34FB`.
public enum GATTService {
    public static let deviceInformation: UInt16 = 0x180A
    public static let glucose: UInt16 = 0x1808
    public static let healthThermometer: UInt16 = 0x1809
    public static let heartRate: UInt16 = 0x180D
    public static let battery: UInt16 = 0x180F
    public static let bloodPressure: UInt16 = 0x1810
    public static let runningSpeedAndCadence: UInt16 = 0x1814
    public static let cyclingSpeedAndCadence: UInt16 = 0x1816
    public static let cyclingPower: UInt16 = 0x1818
    public static let bodyComposition: UInt16 = 0x181B
    public static let weightScale: UInt16 = 0x181D
    public static let pulseOximeter: UInt16 = 0x1822
    public static let fitnessMachine: UInt16 = 0x1826
}

public enum GATTCharacteristic {
    // Heart Rate
    public static let heartRateMeasurement: UInt16 = 0x2A37
    public static let bodySensorLocation: UInt16 = 0x2A38
    // Battery
    public static let batteryLevel: UInt16 = 0x2A19
    // Device Information
    public static let systemID: UInt16 = 0x2A23
    public static let modelNumber: UInt16 = 0x2A24
    public static let serialNumber: UInt16 = 0x2A25
    public static let firmwareRevision: UInt16 = 0x2A26
    public static let hardwareRevision: UInt16 = 0x2A27
    public static let softwareRevision: UInt16 = 0x2A28
    public static let manufacturerName: UInt16 = 0x2A29
    public static let pnpID: UInt16 = 0x2A50
    // Cycling Speed and Cadence
    public static let cscMeasurement: UInt16 = 0x2A5B
    public static let cscFeature: UInt16 = 0x2A5C
    public static let sensorLocation: UInt16 = 0x2A5D
    // Running Speed and Cadence
    public static let rscMeasurement: UInt16 = 0x2A53
    public static let rscFeature: UInt16 = 0x2A54
    // Cycling Power
    public static let cyclingPowerMeasurement: UInt16 = 0x2A63
    public static let cyclingPowerFeature: UInt16 = 0x2A65
    // Fitness Machine
    public static let fitnessMachineFeature: UInt16 = 0x2ACC
    public static let treadmillData: UInt16 = 0x2ACD
    public static let crossTrainerData: UInt16 = 0x2ACE
    public static let rowerData: UInt16 = 0x2AD1
    public static let indoorBikeData: UInt16 = 0x2AD2
    // Weight Scale, Body Composition
    public static let weightMeasurement: UInt16 = 0x2A9D
    public static let weightScaleFeature: UInt16 = 0x2A9E
    public static let bodyCompositionMeasurement: UInt16 = 0x2A9C
    public static let bodyCompositionFeature: UInt16 = 0x2A9B
    // Blood Pressure
    public static let bloodPressureMeasurement: UInt16 = 0x2A35
    public static let intermediateCuffPressure: UInt16 = 0x2A36
    public static let bloodPressureFeature: UInt16 = 0x2A49
    // Health Thermometer
    public static let temperatureMeasurement: UInt16 = 0x2A1C
    public static let temperatureType: UInt16 = 0x2A1D
    public static let intermediateTemperature: UInt16 = 0x2A1E
    // Pulse Oximeter
    public static let plxSpotCheckMeasurement: UInt16 = 0x2A5E
    public static let plxContinuousMeasurement: UInt16 = 0x2A5F
    public static let plxFeatures: UInt16 = 0x2A60
    // Glucose
    public static let glucoseMeasurement: UInt16 = 0x2A18
    public static let glucoseMeasurementContext: UInt16 = 0x2A34
    public static let glucoseFeature: UInt16 = 0x2A51
    public static let recordAccessControlPoint: UInt16 = 0x2A52
    // Descriptors
    public static let clientCharacteristicConfiguration: UInt16 = 0x2902
}

/// Display names, as the Bluetooth SIG spells them.
public enum GATTNames {
    public static func service(_ uuid: UInt16) -> String? { services[uuid] }
    public static func characteristic(_ uuid: UInt16) -> String? { characteristics[uuid] }

    /// "Heart Rate Measurement (0x2A37)", or "0x1234" for a number this module does not know.
    public static func describeCharacteristic(_ uuid: UInt16) -> String {
        let hex = "0x" + String(uuid, radix: 16, uppercase: true).leftPadded(to: 4)
        return characteristics[uuid].map { "\($0) (\(hex))" } ?? hex
    }

    static let services: [UInt16: String] = [
        GATTService.deviceInformation: "Device Information",
        GATTService.glucose: "Glucose",
        GATTService.healthThermometer: "Health Thermometer",
        GATTService.heartRate: "Heart Rate",
        GATTService.battery: "Battery",
        GATTService.bloodPressure: "Blood Pressure",
        GATTService.runningSpeedAndCadence: "Running Speed and Cadence",
        GATTService.cyclingSpeedAndCadence: "Cycling Speed and Cadence",
        GATTService.cyclingPower: "Cycling Power",
        GATTService.bodyComposition: "Body Composition",
        GATTService.weightScale: "Weight Scale",
        GATTService.pulseOximeter: "Pulse Oximeter",
        GATTService.fitnessMachine: "Fitness Machine",
    ]

    static let characteristics: [UInt16: String] = [
        GATTCharacteristic.heartRateMeasurement: "Heart Rate Measurement",
        GATTCharacteristic.bodySensorLocation: "Body Sensor Location",
        GATTCharacteristic.batteryLevel: "Battery Level",
        GATTCharacteristic.systemID: "System ID",
        GATTCharacteristic.modelNumber: "Model Number String",
        GATTCharacteristic.serialNumber: "Serial Number String",
        GATTCharacteristic.firmwareRevision: "Firmware Revision String",
        GATTCharacteristic.hardwareRevision: "Hardware Revision String",
        GATTCharacteristic.softwareRevision: "Software Revision String",
        GATTCharacteristic.manufacturerName: "Manufacturer Name String",
        GATTCharacteristic.pnpID: "PnP ID",
        GATTCharacteristic.cscMeasurement: "CSC Measurement",
        GATTCharacteristic.cscFeature: "CSC Feature",
        GATTCharacteristic.sensorLocation: "Sensor Location",
        GATTCharacteristic.rscMeasurement: "RSC Measurement",
        GATTCharacteristic.rscFeature: "RSC Feature",
        GATTCharacteristic.cyclingPowerMeasurement: "Cycling Power Measurement",
        GATTCharacteristic.cyclingPowerFeature: "Cycling Power Feature",
        GATTCharacteristic.fitnessMachineFeature: "Fitness Machine Feature",
        GATTCharacteristic.treadmillData: "Treadmill Data",
        GATTCharacteristic.crossTrainerData: "Cross Trainer Data",
        GATTCharacteristic.rowerData: "Rower Data",
        GATTCharacteristic.indoorBikeData: "Indoor Bike Data",
        GATTCharacteristic.weightMeasurement: "Weight Measurement",
        GATTCharacteristic.weightScaleFeature: "Weight Scale Feature",
        GATTCharacteristic.bodyCompositionMeasurement: "Body Composition Measurement",
        GATTCharacteristic.bodyCompositionFeature: "Body Composition Feature",
        GATTCharacteristic.bloodPressureMeasurement: "Blood Pressure Measurement",
        GATTCharacteristic.intermediateCuffPressure: "Intermediate Cuff Pressure",
        GATTCharacteristic.bloodPressureFeature: "Blood Pressure Feature",
        GATTCharacteristic.temperatureMeasurement: "Temperature Measurement",
        GATTCharacteristic.temperatureType: "Temperature Type",
        GATTCharacteristic.intermediateTemperature: "Intermediate Temperature",
        GATTCharacteristic.plxSpotCheckMeasurement: "PLX Spot-Check Measurement",
        GATTCharacteristic.plxContinuousMeasurement: "PLX Continuous Measurement",
        GATTCharacteristic.plxFeatures: "PLX Features",
        GATTCharacteristic.glucoseMeasurement: "Glucose Measurement",
        GATTCharacteristic.glucoseMeasurementContext: "Glucose Measurement Context",
        GATTCharacteristic.glucoseFeature: "Glucose Feature",
        GATTCharacteristic.recordAccessControlPoint: "Record Access Control Point",
        GATTCharacteristic.clientCharacteristicConfiguration: "Client Characteristic Configuration",
    ]
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
