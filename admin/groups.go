package admin

func (a *Admin) groupRoutes() []Route { return nil }
